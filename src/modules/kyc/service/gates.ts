import type { KycCtx } from '../context'
import type { ProfileStatus } from '../domain/status'
import { kycProfiles, kycSteps } from '../schema'
import { gatesOf, scoped, settingsOf } from './shared'

/** The KYC gates of a customer (the cashier's deposit limit and withdrawal check). */
export async function gatesFor(ctx: KycCtx, brandId: number, customerId: number) {
  const s = await settingsOf(ctx, brandId)
  const steps = await ctx.db.select().from(kycSteps).where(scoped(brandId, customerId).steps)
  const [p] = await ctx.db
    .select({ status: kycProfiles.status })
    .from(kycProfiles)
    .where(scoped(brandId, customerId).profile)
  return { status: (p?.status ?? 'not_started') as ProfileStatus, ...gatesOf(s, steps) }
}
