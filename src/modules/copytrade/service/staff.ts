import { and, desc, eq, isNull, lt } from 'drizzle-orm'
import { currencyOf } from '../accounts-of'
import type { CopyCtx } from '../context'
import { copyMasters, copySubscriptions } from '../schema'
import { masterView, subscriptionView } from '../views'
import { copyError } from './errors'
import { masterById } from './masters'
import { moveMasterSubscriptionsTx, transition } from './subscription-status'

export async function staffMasters(
  ctx: CopyCtx,
  brandId: number,
  q: { enabled?: number; customer_id?: number; limit?: number; before?: number },
) {
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
export async function staffDisableMaster(
  ctx: CopyCtx,
  brandId: number,
  staffId: number,
  id: number,
  input: { reason: string; end_subscriptions?: boolean },
) {
  const m = await masterById(ctx, brandId, id)
  const reason = input.reason || `disabled by staff ${staffId}`
  await ctx.uow.run(async (tx, work) => {
    await tx
      .update(copyMasters)
      .set({ enabled: 0, blockedReason: reason, updatedAt: ctx.clock.now() })
      .where(eq(copyMasters.id, m.id))
    if (input.end_subscriptions) {
      await moveMasterSubscriptionsTx(ctx, tx, work, m.id, 'disable', reason)
    }
  })
  return masterView((await ctx.db.select().from(copyMasters).where(eq(copyMasters.id, m.id)))[0]!)
}

export async function staffSubscriptions(
  ctx: CopyCtx,
  brandId: number,
  q: { master_id?: number; follower_login?: number; status?: number; limit?: number; before?: number },
) {
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
  const out = []
  for (const s of rows.slice(0, limit)) {
    const currency = await currencyOf(ctx, s.followerLogin, 'USD')
    out.push({ ...subscriptionView(s, currency), customer_id: s.customerId })
  }
  return { rows: out, next_before: rows.length > limit ? rows[limit - 1]!.id : 0 }
}

export async function staffDisableSubscription(
  ctx: CopyCtx,
  brandId: number,
  staffId: number,
  id: number,
  reason: string,
) {
  const [s] = await ctx.db
    .select()
    .from(copySubscriptions)
    .where(and(eq(copySubscriptions.id, id), eq(copySubscriptions.brandId, brandId)))
  if (!s) throw copyError('SUBSCRIPTION_NOT_FOUND', `subscription ${id} not found`)
  await transition(ctx, s, 'disable', reason || `disabled by staff ${staffId}`)
}
