import type { UseCase } from '../../../kernel/use-case'
import type { KycCtx } from '../context'
import type { ProfileStatus } from '../domain/status'
import { kycProfiles, kycSteps } from '../schema'
import { type CustomerScope, gatesOf, scoped, settingsOf } from './shared'

/** The KYC gates of a customer (the cashier's deposit limit and withdrawal check). */
export async function gatesFor({ ctx, brandId, customerId }: UseCase<KycCtx, undefined, CustomerScope>) {
  const s = await settingsOf(ctx, brandId)
  const steps = await ctx.db.select().from(kycSteps).where(scoped(brandId, customerId).steps)
  const [p] = await ctx.db
    .select({ status: kycProfiles.status })
    .from(kycProfiles)
    .where(scoped(brandId, customerId).profile)
  return { status: (p?.status ?? 'not_started') as ProfileStatus, ...gatesOf(s, steps) }
}
