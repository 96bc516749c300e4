import type { Queryable } from '../../../kernel/db/client'
import type { UseCase } from '../../../kernel/use-case'
import type { KycCtx } from '../context'
import { kycSteps } from '../schema'
import { type CustomerScope, derivedStatus, gatesOf, scoped, settingsOf } from './shared'

/**
 * The KYC gates of a customer (the cashier's deposit limit and withdrawal check), read in `q` (a caller's
 * transaction: what its write is decided under).
 */
export async function gatesFor({
  ctx,
  brandId,
  customerId,
  q = ctx.db,
}: UseCase<KycCtx, undefined, CustomerScope & { q?: Queryable }>) {
  const s = await settingsOf(ctx, brandId, q)
  const steps = await q.select().from(kycSteps).where(scoped(brandId, customerId).steps)
  // derived from the steps under the settings now, as the gates are (the stored one may predate a change)
  return { status: derivedStatus(s, steps), ...gatesOf(s, steps) }
}
