import { and, eq, inArray, isNotNull, isNull, lte, sql } from 'drizzle-orm'
import type { Tx } from '../../../kernel/db/client'
import { isRefused } from '../../../kernel/http/errors'
import { currencyDecimals } from '../../accounts'
import { conversionRate } from '../../market'
import { accountOf, currencyOf } from '../accounts-of'
import type { CopyCtx } from '../context'
import { convertMinor, REWARD, subscriptionFee } from '../domain/rewards'
import { SUB_STATUS } from '../domain/status'
import { copyMasters, copyRewards, copySubscriptions } from '../schema'
import { rewardPolicyOf } from '../views'

type Sub = typeof copySubscriptions.$inferSelect

/**
 * Accrues a reward owed by a subscription to its master, once per `key` (its cause), in the caller's
 * transaction; the id, or null when that cause was accrued already.
 */
export async function accrueTx(
  ctx: CopyCtx,
  tx: Tx,
  sub: { id: number; brandId: number; followerLogin: number },
  m: { id: number; payoutLogin: number; currency: string },
  r: { key: string; type: number; base: number; amount: number; currency: string; note: string },
  status: 'pending' | 'held' = 'pending',
) {
  // a DEMO follower owes a REAL master nothing (and the reverse): demo money never becomes real
  if (!(await sameMode(ctx, sub.followerLogin, m.payoutLogin))) return null
  const [row] = await tx
    .insert(copyRewards)
    .values({
      key: r.key,
      brandId: sub.brandId,
      subscriptionId: sub.id,
      masterId: m.id,
      rewardType: r.type,
      followerLogin: sub.followerLogin,
      payoutLogin: m.payoutLogin,
      base: r.base,
      amountMinor: r.amount,
      currency: r.currency,
      payoutCurrency: await currencyOf(ctx, m.payoutLogin, m.currency),
      status,
      note: r.note,
      createdAt: ctx.clock.now(),
    })
    .onConflictDoNothing()
    .returning({ id: copyRewards.id })
  return row?.id ?? null
}

/** Whether two accounts are both DEMO or both REAL: only then can fees move between them (README). */
export async function sameMode(ctx: CopyCtx, a: number, b: number) {
  const [x, y] = await Promise.all([accountOf(ctx, a), accountOf(ctx, b)])
  return !!x.group && !!y.group && x.group.accountMode === y.group.accountMode
}

/**
 * Settles accruals after the commit that made them, before the caller's step ends (the relay's delivery
 * of the open is then done with its rebates); what fails stays pending for `copytrade.settle`.
 */
export async function settleSoon(ctx: CopyCtx, ids: number[]) {
  await settleRewards(ctx, ids).catch((e) =>
    ctx.logger.log('warn', 'copy reward settlement deferred', {
      err: e instanceof Error ? e.message : String(e),
    }),
  )
}

/**
 * The accruals a consumer's delivery wrote, kept by event and settled in its `after` once the delivery
 * committed (what fails there stays pending for `copytrade.settle`).
 */
export function settleAfterDelivery(ctx: CopyCtx) {
  const accrued = new Map<number, number[]>()
  return {
    keep(eventId: number, ids: number[]) {
      if (ids.length > 0) accrued.set(eventId, ids)
    },
    async after(e: { id: number }) {
      const ids = accrued.get(e.id)
      accrued.delete(e.id)
      if (ids) await settleRewards(ctx, ids)
    },
  }
}

/**
 * Settles pending accruals (spec 4.12): per accrual, in one transaction, the conditional move
 * pending -> settled and two balance operations with reason TR_REASON_COPY_REWARD, OP_BALANCE_OUT from the
 * follower and OP_BALANCE_IN to the master's payout account (converted at the cross rate when the
 * currencies differ), both carrying `copy_reward_accrual_id` and keyed by it, so a second settlement
 * of the same accrual changes nothing. A follower without the balance, or whose free margin it would
 * eat into, keeps it pending (a fee must not be what stops out the follower's positions); the job tries
 * again on its next run.
 */
export async function settleRewards(ctx: CopyCtx, ids?: number[]) {
  const pending = await ctx.db
    .select()
    .from(copyRewards)
    .where(and(eq(copyRewards.status, 'pending'), ids ? inArray(copyRewards.id, ids) : undefined))
    .limit(500)
  let settled = 0
  const quotes = await ctx.market.quoteLookup()
  for (const a of pending) {
    const rate = conversionRate(a.currency, a.payoutCurrency, quotes)
    if (rate === null) continue
    const payoutMinor = convertMinor(
      a.amountMinor,
      rate,
      currencyDecimals(a.currency),
      currencyDecimals(a.payoutCurrency),
    )
    const apiData = {
      module: 'copytrade',
      copy_reward_accrual_id: a.id,
      subscription_id: a.subscriptionId,
      master_id: a.masterId,
      reward_type: a.rewardType,
    }
    try {
      await ctx.uow.run(async (tx, work) => {
        const moved = await tx
          .update(copyRewards)
          .set({ status: 'settled', payoutAmountMinor: payoutMinor, settledAt: ctx.clock.now() })
          .where(and(eq(copyRewards.id, a.id), eq(copyRewards.status, 'pending')))
          .returning({ id: copyRewards.id })
        if (moved.length === 0) return
        // paid from the copy: the copy equity of fees on equity counts it (copier/equity.ts)
        await tx
          .update(copySubscriptions)
          .set({ feesMinor: sql`${copySubscriptions.feesMinor} + ${a.amountMinor}` })
          .where(eq(copySubscriptions.id, a.subscriptionId))
        await ctx.accounts.transferTx(tx, work, {
          brandId: a.brandId,
          from: { login: a.followerLogin, amountMinor: a.amountMinor },
          to: { login: a.payoutLogin, amountMinor: payoutMinor },
          reason: 'TR_REASON_COPY_REWARD',
          comment: 'COPY_REWARD',
          apiData,
          idempotencyKey: `copy-reward:${a.id}`,
          createdBy: 'copytrade',
          keepFreeMargin: true,
        })
      })
      settled++
    } catch (e) {
      // accrued before DEMO and REAL were kept apart, or on an account whose money is not its customer's
      // (a prop challenge's): never payable, cancelled
      if (isRefused(e) && (e.code === 'ACCOUNT_MODE_MISMATCH' || e.code === 'ACCOUNT_MANAGED'))
        await ctx.db
          .update(copyRewards)
          .set({
            status: 'cancelled',
            note: `${a.note}; cancelled: ${e.message}`,
            settledAt: ctx.clock.now(),
          })
          .where(and(eq(copyRewards.id, a.id), eq(copyRewards.status, 'pending')))
      // not enough balance or free margin on the follower: stays pending, tried again by the job
      else if (!isRefused(e)) throw e
    }
  }
  return settled
}

/** A SUBSCRIPTION_FEE accrual's key: one per subscription and period (its start). */
export const subscriptionFeeKey = (subId: number, periodStart: number) => `fee:${subId}:${periodStart}`

/** The start of the period a SUBSCRIPTION_FEE accrual's key names. */
export const feePeriodStart = (key: string) => Number(key.slice(key.lastIndexOf(':') + 1))

/**
 * SUBSCRIPTION_FEE periods that came due on a running fee clock (`next_fee_at` at or before `now`), accrued
 * in the caller's transaction: each period once (its key names its start, the same for the job, the
 * subscribe, a terms switch and an end), `next_fee_at` moved past them conditional on the value read, so
 * two writers charge once. The caller checks the clock runs (ACTIVE, not paused, master enabled). The
 * accruals to settle after the commit and the next fee date; none without a conversion rate (the period
 * stays due for the job).
 */
export async function subscriptionFeesTx(
  ctx: CopyCtx,
  tx: Tx,
  sub: Sub,
  master: { id: number; payoutLogin: number; currency: string },
  now: number,
): Promise<{ ids: number[]; nextFeeAt: number | null }> {
  const policy = rewardPolicyOf(sub)
  const none = { ids: [], nextFeeAt: sub.nextFeeAt }
  if (policy.reward_type !== REWARD.SUBSCRIPTION_FEE || sub.nextFeeAt === null || sub.nextFeeAt > now)
    return none
  const { group } = await accountOf(ctx, sub.followerLogin)
  const rate = group && conversionRate(master.currency, group.currency, await ctx.market.quoteLookup())
  if (!group || !rate) return none
  const period = policy.period_days * 86_400_000
  const starts: number[] = []
  for (let at = sub.nextFeeAt; at <= now; at += period) starts.push(at)
  const next = starts[starts.length - 1]! + period
  const moved = await tx
    .update(copySubscriptions)
    .set({ nextFeeAt: next })
    .where(and(eq(copySubscriptions.id, sub.id), eq(copySubscriptions.nextFeeAt, sub.nextFeeAt)))
    .returning({ id: copySubscriptions.id })
  if (moved.length === 0) return none
  const amount = subscriptionFee(policy.amount, rate, currencyDecimals(group.currency))
  const ids: number[] = []
  for (const periodStart of amount > 0 ? starts : []) {
    const id = await accrueTx(ctx, tx, sub, master, {
      key: subscriptionFeeKey(sub.id, periodStart),
      type: REWARD.SUBSCRIPTION_FEE,
      base: policy.period_days,
      amount,
      currency: group.currency,
      note: `${policy.amount} ${master.currency} for ${policy.period_days} days from ${new Date(periodStart).toISOString().slice(0, 10)}`,
    })
    if (id) ids.push(id)
  }
  return { ids, nextFeeAt: next }
}

/**
 * SUBSCRIPTION_FEE: each ACTIVE subscription of a master with that policy owes the period's amount when
 * its `next_fee_at` comes (at the start, charged when it subscribes, then every `period_days`); the
 * accrual's key names the period, so two runs of the job accrue it once.
 */
export async function accrueSubscriptionFees(ctx: CopyCtx, now: number) {
  const due = await ctx.db
    .select({ sub: copySubscriptions, master: copyMasters })
    .from(copySubscriptions)
    .innerJoin(copyMasters, eq(copyMasters.id, copySubscriptions.masterId))
    .where(
      and(
        eq(copySubscriptions.status, SUB_STATUS.ACTIVE),
        // the fee clock runs (neither paused nor of a disabled master)
        isNull(copySubscriptions.pausedAt),
        isNotNull(copySubscriptions.nextFeeAt),
        lte(copySubscriptions.nextFeeAt, now),
        eq(copySubscriptions.rewardType, REWARD.SUBSCRIPTION_FEE),
      ),
    )
    .limit(500)
  const ids: number[] = []
  for (const { sub, master } of due)
    ids.push(...(await ctx.db.transaction((tx) => subscriptionFeesTx(ctx, tx, sub, master, now))).ids)
  if (ids.length > 0) await settleRewards(ctx, ids)
}
