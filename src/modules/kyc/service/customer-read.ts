import { desc } from 'drizzle-orm'
import type { UseCase } from '../../../kernel/use-case'
import type { KycCtx } from '../context'
import { kycDocuments } from '../schema'
import { type CustomerScope, documentView, load, profileView, scoped, stepNotFound, stepView } from './shared'

/** GET /customer/kyc: the profile, created on first read with the brand's steps. */
export async function customerProfile({
  ctx,
  brandId,
  customerId,
}: UseCase<KycCtx, undefined, CustomerScope>) {
  return profileView(await load(ctx, brandId, customerId), false)
}

/** One step of the customer's profile (`code` from the path). */
export async function customerStep({
  ctx,
  brandId,
  customerId,
  code,
}: UseCase<KycCtx, undefined, CustomerScope & { code: string }>) {
  const l = await load(ctx, brandId, customerId)
  const def = l.s.steps.find((d) => d.code === code)
  const row = l.steps.find((r) => r.code === code)
  if (!def || !row) throw stepNotFound(code)
  return stepView(def, row, l.docs, false)
}

export async function customerDocuments({
  ctx,
  brandId,
  customerId,
}: UseCase<KycCtx, undefined, CustomerScope>) {
  const rows = await ctx.db
    .select()
    .from(kycDocuments)
    .where(scoped(brandId, customerId).docs)
    .orderBy(desc(kycDocuments.id))
  return { rows: rows.map((d) => documentView(d, false)) }
}
