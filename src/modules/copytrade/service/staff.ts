import { and, desc, eq, isNull, lt } from 'drizzle-orm'
import type { UseCase } from '../../../kernel/use-case'
import { currenciesOf } from '../accounts-of'
import type { CopyCtx } from '../context'
import { settleSoon } from '../copier/rewards'
import { copyMasters, copySubscriptions } from '../schema'
import { masterView, subscriptionView } from '../views'
import { copyError } from './errors'
import { masterById } from './masters'
import { masterFeeClockTx, moveMasterSubscriptionsTx, transition } from './subscription-status'

/** Who acts on which record: the brand's staff member, and the master or subscription the path names. */
interface StaffScope {
  brandId: number
  staffId: number
  id: number
}

export async function staffMasters({
  ctx,
  brandId,
  input: q,
}: UseCase<
  CopyCtx,
  { enabled?: number; customer_id?: number; limit?: number; before?: number },
  { brandId: number }
>) {
  const limit = q.limit ?? 100
  const rows = await ctx.db
    .select()
    .from(copyMasters)
    .where(
      and(
        eq(copyMasters.brandId, brandId),
        isNull(copyMasters.deletedAt),
        q.enabled !== undefined ? eq(copyMasters.enabled, q.enabled) : undefined,
        q.customer_id !== undefined ? eq(copyMasters.customerId, q.customer_id) : undefined,
        q.before ? lt(copyMasters.id, q.before) : undefined,
      ),
    )
    .orderBy(desc(copyMasters.id))
    .limit(limit + 1)
  return {
    rows: rows.slice(0, limit).map(masterView),
    next_before: rows.length > limit ? rows[limit - 1]!.id : 0,
  }
}

/**
 * Staff disable a master: it copies nothing new and its owner cannot enable it again; closes of
 * positions already copied are still copied. With `end_subscriptions`, its subscriptions end too (their
 * copies are closed).
 */
export async function staffDisableMaster({
  ctx,
  brandId,
  staffId,
  id,
  input,
}: UseCase<CopyCtx, { reason: string; end_subscriptions?: boolean }, StaffScope>) {
  const m = await masterById(ctx, brandId, id)
  const reason = input.reason || `disabled by staff ${staffId}`
  await ctx.uow.run(async (tx, work) => {
    await tx
      .update(copyMasters)
      .set({ enabled: 0, blockedReason: reason, updatedAt: ctx.clock.now() })
      .where(eq(copyMasters.id, m.id))
    // the fee clocks stop: what they owed up to now is charged; an end then charges its performance fee
    const fees = await masterFeeClockTx(ctx, tx, m.id, false)
    if (fees.length > 0) work.after(`copy-fees:${fees.join(',')}`, () => settleSoon(ctx, fees))
    if (input.end_subscriptions) {
      await moveMasterSubscriptionsTx(ctx, tx, work, m.id, 'disable', reason)
    }
  })
  return masterView((await ctx.db.select().from(copyMasters).where(eq(copyMasters.id, m.id)))[0]!)
}

export async function staffSubscriptions({
  ctx,
  brandId,
  input: q,
}: UseCase<
  CopyCtx,
  { master_id?: number; follower_login?: number; status?: number; limit?: number; before?: number },
  { brandId: number }
>) {
  const limit = q.limit ?? 100
  const rows = await ctx.db
    .select()
    .from(copySubscriptions)
    .where(
      and(
        eq(copySubscriptions.brandId, brandId),
        q.master_id !== undefined ? eq(copySubscriptions.masterId, q.master_id) : undefined,
        q.follower_login !== undefined ? eq(copySubscriptions.followerLogin, q.follower_login) : undefined,
        q.status !== undefined ? eq(copySubscriptions.status, q.status) : undefined,
        q.before ? lt(copySubscriptions.id, q.before) : undefined,
      ),
    )
    .orderBy(desc(copySubscriptions.id))
    .limit(limit + 1)
  const page = rows.slice(0, limit)
  // the page's currencies in one read, not one per row (a page of 500 at the edge: 1,000 subrequests)
  const currency = await currenciesOf(
    ctx,
    page.map((s) => s.followerLogin),
    'USD',
  )
  return {
    rows: page.map((s) => ({ ...subscriptionView(s, currency(s.followerLogin)), customer_id: s.customerId })),
    next_before: rows.length > limit ? rows[limit - 1]!.id : 0,
  }
}

export async function staffDisableSubscription({
  ctx,
  brandId,
  staffId,
  id,
  input: { reason },
}: UseCase<CopyCtx, { reason: string }, StaffScope>) {
  const [s] = await ctx.db
    .select()
    .from(copySubscriptions)
    .where(and(eq(copySubscriptions.id, id), eq(copySubscriptions.brandId, brandId)))
  if (!s) throw copyError('SUBSCRIPTION_NOT_FOUND', `subscription ${id} not found`)
  await transition({
    ctx,
    subscription: s,
    input: { action: 'disable', reason: reason || `disabled by staff ${staffId}` },
  })
}
