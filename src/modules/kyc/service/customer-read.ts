import { desc } from 'drizzle-orm'
import type { KycCtx } from '../context'
import { kycDocuments } from '../schema'
import { documentView, load, profileView, scoped, stepNotFound, stepView } from './shared'

export async function customerProfile(ctx: KycCtx, brandId: number, customerId: number) {
  return profileView(await load(ctx, brandId, customerId), false)
}

export async function customerStep(ctx: KycCtx, brandId: number, customerId: number, code: string) {
  const l = await load(ctx, brandId, customerId)
  const def = l.s.steps.find((d) => d.code === code)
  const row = l.steps.find((r) => r.code === code)
  if (!def || !row) throw stepNotFound(code)
  return stepView(def, row, l.docs, false)
}

export async function customerDocuments(ctx: KycCtx, brandId: number, customerId: number) {
  const rows = await ctx.db
    .select()
    .from(kycDocuments)
    .where(scoped(brandId, customerId).docs)
    .orderBy(desc(kycDocuments.id))
  return { rows: rows.map((d) => documentView(d, false)) }
}
