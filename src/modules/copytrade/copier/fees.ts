import { and, eq, gt, isNull, lt, lte, or, sql } from 'drizzle-orm'
import type { Queryable, Tx } from '../../../kernel/db/client'
import { inJsonArray, statement } from '../../../kernel/db/statement'
import type { Consumer, PayloadOf } from '../../../kernel/events/topic'
import { BalanceOperation, currencyDecimals } from '../../accounts'
import type { CopyCtx } from '../context'
import { managementFee, performanceFee } from '../domain/fees'
import { REWARD, REWARD_NAMES } from '../domain/rewards'
import { SUB_STATUS } from '../domain/status'
import { copyLinks, copyMasters, copySubscriptions, liveSubscription } from '../schema'
import { rewardPolicyOf } from '../views'
import { copyEquity } from './equity'
import { applyFlowTx, flowOf } from './flows'
import { FLOW_CONSUMER, holdDecidedTx, holdTakenTx } from './holds'
import { accrueTx, sameMode, settleAfterDelivery, settleRewards, subscriptionFeesTx } from './rewards'

type Sub = typeof copySubscriptions.$inferSelect
type Master = typeof copyMasters.$inferSelect
const DAY = 86_400_000

/** When the first PERFORMANCE_FEE_HWM period of a new subscription ends (null for other policies). */
export function perfPeriodEnd(m: Pick<Master, 'rewardType' | 'rewardParams'>, now: number) {
  if (m.rewardType !== REWARD.PERFORMANCE_FEE_HWM) return null
  const p = rewardPolicyOf(m)
  return p.reward_type === REWARD.PERFORMANCE_FEE_HWM ? now + p.period_days * DAY : null
}

type Equity = { equity: number; currency: string }

/**
 * The performance fee on `e` above the mark, accrued in the caller's transaction, the mark moved to the
 * equity after it (conditional on the mark read: null when another run moved it first). The mark moves
 * only together with its fee: a key accrued already (a cause charged before) moves nothing and answers
 * null, so gains since are charged by the next cause, not dropped. The mark after.
 */
async function performanceFeeTx(
  ctx: CopyCtx,
  tx: Tx,
  sub: Sub,
  master: Master,
  e: Equity,
  key: string,
  why: string,
): Promise<{ id: number | null; hwm: number; moved: boolean } | null> {
  // on the terms the follower accepted, not on what the master offers now
  const policy = rewardPolicyOf(sub)
  const none = { id: null, hwm: sub.hwmMinor, moved: false }
  if (policy.reward_type !== REWARD.PERFORMANCE_FEE_HWM) return none
  const due = performanceFee(e.equity, sub.hwmMinor, policy.percent)
  if (due.fee <= 0) return none
  const moved = await tx
    .update(copySubscriptions)
    .set({ hwmMinor: due.hwm })
    .where(and(eq(copySubscriptions.id, sub.id), eq(copySubscriptions.hwmMinor, sub.hwmMinor)))
    .returning({ id: copySubscriptions.id })
  if (moved.length === 0) return null
  const id = await accrueTx(ctx, tx, sub, master, {
    key,
    type: REWARD.PERFORMANCE_FEE_HWM,
    base: e.equity - sub.hwmMinor,
    amount: due.fee,
    currency: e.currency,
    note: `${policy.percent} % of the copy equity ${e.equity} above the mark ${sub.hwmMinor} (${why})`,
  })
  // no row: a DEMO/REAL pair owes nothing (the mark moves as if paid), or the key was charged already
  // (the mark goes back: the gains stay to charge)
  if (id === null && (await sameMode(ctx, sub.followerLogin, master.payoutLogin))) {
    await tx
      .update(copySubscriptions)
      .set({ hwmMinor: sub.hwmMinor })
      .where(and(eq(copySubscriptions.id, sub.id), eq(copySubscriptions.hwmMinor, due.hwm)))
    return null
  }
  return { id, hwm: due.hwm, moved: true }
}

/**
 * MANAGEMENT_FEE, in the caller's transaction, for the days from `mgmt_day` (the first not charged) to
 * `until` (excluded), on `e.managed` (the copy equity, its money capped at its share of the account's
 * balance: copier/equity.ts); `mgmt_day` moves to `until` conditional on the day read, so two
 * writers charge a day once. The unit is the UTC day: each day the fee clock ran in, for any part of it,
 * is one whole day (the day of subscribing, and the day the clock stops, included). Accrued in parts of
 * at most 31 days, each keyed by its last day + 1. Null when another writer moved the day first.
 */
async function managementFeeTx(
  ctx: CopyCtx,
  tx: Tx,
  sub: Sub,
  master: Master,
  e: { managed: number; currency: string },
  until: number,
) {
  const policy = rewardPolicyOf(sub)
  if (policy.reward_type !== REWARD.MANAGEMENT_FEE || sub.mgmtDay >= until) return []
  const moved = await tx
    .update(copySubscriptions)
    .set({ mgmtDay: until })
    .where(and(eq(copySubscriptions.id, sub.id), eq(copySubscriptions.mgmtDay, sub.mgmtDay)))
    .returning({ id: copySubscriptions.id })
  if (moved.length === 0) return null
  const ids: number[] = []
  for (let from = sub.mgmtDay; from < until; from += 31) {
    const days = Math.min(31, until - from)
    const fee = managementFee(e.managed, policy.annual_percent, days)
    if (fee <= 0) continue
    const id = await accrueTx(ctx, tx, sub, master, {
      key: `mgmt:${sub.id}:${from + days}`,
      type: REWARD.MANAGEMENT_FEE,
      base: e.managed,
      amount: fee,
      currency: e.currency,
      note: `${policy.annual_percent} % a year on the copy equity ${e.managed} for ${days} day(s)`,
    })
    if (id) ids.push(id)
  }
  return ids
}

/**
 * What a running fee clock owes when it stops (a pause, an equity stop, the master disabled, the end of
 * the subscription), in the transaction that stops it: the management fee's days up to and including
 * today, and the subscription fee's periods that came due (the job may not have run since). Nothing
 * when the clock stood still already (its stop charged it). The accruals, to settle after the commit.
 */
export async function feeClockStopTx(ctx: CopyCtx, tx: Tx, sub: Sub, master: Master, now: number) {
  if (sub.status !== SUB_STATUS.ACTIVE || sub.pausedAt !== null) return []
  const ids: number[] = []
  if (sub.rewardType === REWARD.MANAGEMENT_FEE) {
    const e = await copyEquity(ctx, sub, tx, { managed: true })
    ids.push(...((await managementFeeTx(ctx, tx, sub, master, e, Math.floor(now / DAY) + 1)) ?? []))
  }
  if (sub.rewardType === REWARD.SUBSCRIPTION_FEE)
    ids.push(...(await subscriptionFeesTx(ctx, tx, sub, master, now)).ids)
  return ids
}

/**
 * The end of a subscription (whoever ends it: its follower, staff, the master's deletion), in the
 * transaction that ends it, conditional on it: the performance fee on the gains so far, gains of copies
 * kept open while paused included, then what the running fee clock owes (feeClockStopTx) on the equity
 * after it. The accruals, to settle after the commit. The fee's key names the mark it is charged above
 * (`hwm:<id>:end:<mark>`, as a terms change's does): a key an earlier release wrote before an end that
 * then lost its race must not take this end's gains.
 */
export async function subscriptionEndTx(ctx: CopyCtx, tx: Tx, sub: Sub, master: Master, now: number) {
  const ids: number[] = []
  if (sub.rewardType === REWARD.PERFORMANCE_FEE_HWM) {
    const e = await copyEquity(ctx, sub, tx)
    const perf = await performanceFeeTx(
      ctx,
      tx,
      sub,
      master,
      e,
      `hwm:${sub.id}:end:${sub.hwmMinor}`,
      'subscription ended',
    )
    if (perf?.id) ids.push(perf.id)
  }
  ids.push(...(await feeClockStopTx(ctx, tx, sub, master, now)))
  return ids
}

/** MANAGEMENT_FEE's whole days since the last accrual, once per day (conditional on it): the job. */
async function accrueManagement(ctx: CopyCtx, sub: Sub, master: Master, today: number) {
  if (rewardPolicyOf(sub).reward_type !== REWARD.MANAGEMENT_FEE || sub.mgmtDay >= today) return []
  const e = await copyEquity(ctx, sub, ctx.db, { managed: true })
  return (await ctx.db.transaction((tx) => managementFeeTx(ctx, tx, sub, master, e, today))) ?? []
}

/**
 * Before other terms take over a subscription, in the transaction that switches them (so a switch that
 * loses a race charges nothing): what its accepted terms owe up to now is accrued on them (the performance
 * fee on the gains so far, the management fee's days up to and including today, a subscription fee
 * period that came due), and the mark the new terms start from is the copy equity then, or the old mark
 * when the equity is below it. Gains made under the old terms are never charged at the new rate, and a
 * loss still to win back stays to win back. The caller settles the accruals after the commit. Called
 * with no copy live: the equity is realized. Null when another writer moved the subscription first.
 */
export async function closeTermsTx(
  ctx: CopyCtx,
  tx: Tx,
  sub: Sub,
  master: Master,
  version: number,
  now: number,
) {
  const e = await copyEquity(ctx, sub, tx)
  // keyed by the mark it charges over: a retry after a lost race charges again only what is new
  const perf = await performanceFeeTx(
    ctx,
    tx,
    sub,
    master,
    e,
    `hwm:${sub.id}:terms:${version}:${sub.hwmMinor}`,
    'terms replaced',
  )
  if (!perf) return null
  const ids = perf.id ? [perf.id] : []
  // a running fee clock's days and due periods (none paused or with the master disabled: the stop charged
  // them, and the restart skips what stood still); the management fee on the equity after the performance
  // fee it just accrued (owed)
  let nextFeeAt = sub.nextFeeAt
  if (sub.status === SUB_STATUS.ACTIVE && sub.pausedAt === null) {
    if (sub.rewardType === REWARD.MANAGEMENT_FEE) {
      const after = await copyEquity(ctx, sub, tx, { managed: true })
      const mgmt = await managementFeeTx(ctx, tx, sub, master, after, Math.floor(now / DAY) + 1)
      if (!mgmt) return null
      ids.push(...mgmt)
    }
    const fees = await subscriptionFeesTx(ctx, tx, sub, master, now)
    ids.push(...fees.ids)
    nextFeeAt = fees.nextFeeAt
  }
  // a fee charged moved the mark to the equity after it (even while its payment waits); else the mark
  // rises to the equity, if that is higher
  return { ids, hwm: perf.moved ? perf.hwm : Math.max(sub.hwmMinor, e.equity), nextFeeAt }
}

/** Period ends of PERFORMANCE_FEE_HWM that came due, and MANAGEMENT_FEE days to accrue (job). */
export async function runEquityFees(ctx: CopyCtx, now: number) {
  const today = Math.floor(now / DAY)
  const ids: number[] = []
  // only what is due, a page at a time in id order: every due subscription is reached, however many run
  // (a first page of 2,000 read in no order left the others' periods unended)
  for (let after = 0; ; ) {
    const due = await ctx.db
      .select({ sub: copySubscriptions, master: copyMasters })
      .from(copySubscriptions)
      .innerJoin(copyMasters, eq(copyMasters.id, copySubscriptions.masterId))
      .where(
        and(
          gt(copySubscriptions.id, after),
          // no fee while paused or with the master disabled: the fee clock stands still
          // (service/subscription-status.ts: feeClock), and its restart moves the periods on
          eq(copySubscriptions.status, SUB_STATUS.ACTIVE),
          isNull(copySubscriptions.pausedAt),
          or(
            and(
              eq(copySubscriptions.rewardType, REWARD.PERFORMANCE_FEE_HWM),
              lte(copySubscriptions.nextPerfAt, now),
            ),
            and(
              eq(copySubscriptions.rewardType, REWARD.MANAGEMENT_FEE),
              lt(copySubscriptions.mgmtDay, today),
            ),
          ),
        ),
      )
      .orderBy(copySubscriptions.id)
      .limit(EQUITY_FEES_PAGE)
    ids.push(...(await equityFeesOf(ctx, due, now, today)))
    if (due.length < EQUITY_FEES_PAGE) break
    after = due.at(-1)!.sub.id
  }
  if (ids.length > 0) await settleRewards(ctx, ids)
}

const EQUITY_FEES_PAGE = 2000

/** The period ends and management days of one page of due subscriptions: the accruals made. */
async function equityFeesOf(ctx: CopyCtx, due: { sub: Sub; master: Master }[], now: number, today: number) {
  const ids: number[] = []
  for (const { sub, master } of due) {
    const policy = rewardPolicyOf(sub)
    if (
      policy.reward_type === REWARD.PERFORMANCE_FEE_HWM &&
      sub.nextPerfAt !== null &&
      sub.nextPerfAt <= now
    ) {
      const id = await periodEndTx(ctx, sub, master, policy.period_days, now)
      if (id) ids.push(id)
    }
    if (policy.reward_type === REWARD.MANAGEMENT_FEE)
      ids.push(...(await accrueManagement(ctx, sub, master, today)))
  }
  return ids
}

/**
 * A PERFORMANCE_FEE_HWM period end: its fee and the move to the next period in one transaction, on the
 * subscription as it is there (a crash between them would charge the period again under its key, and
 * move the mark without a fee).
 */
async function periodEndTx(ctx: CopyCtx, read: Sub, master: Master, periodDays: number, now: number) {
  return ctx.db.transaction(async (tx) => {
    const [sub] = await tx
      .select()
      .from(copySubscriptions)
      .where(
        and(
          eq(copySubscriptions.id, read.id),
          eq(copySubscriptions.status, SUB_STATUS.ACTIVE),
          isNull(copySubscriptions.pausedAt),
          eq(copySubscriptions.nextPerfAt, read.nextPerfAt!),
        ),
      )
    if (!sub || sub.nextPerfAt === null || sub.nextPerfAt > now) return null
    await tx
      .update(copySubscriptions)
      .set({ nextPerfAt: sub.nextPerfAt + periodDays * DAY })
      .where(and(eq(copySubscriptions.id, sub.id), eq(copySubscriptions.nextPerfAt, sub.nextPerfAt)))
    const e = await copyEquity(ctx, sub, tx)
    const perf = await performanceFeeTx(
      ctx,
      tx,
      sub,
      master,
      e,
      `hwm:${sub.id}:${sub.nextPerfAt}`,
      'period end',
    )
    return perf?.id ?? null
  })
}

/**
 * The logins (a JSON array) with a live subscription, built once: asked for every balance operation. Its
 * one column is read by position (the statement names it `follower_login`, not the alias).
 */
const followersIn = statement<{ logins: string }>((qb) =>
  qb
    .selectDistinct({ login: copySubscriptions.followerLogin })
    .from(copySubscriptions)
    .where(and(inJsonArray(copySubscriptions.followerLogin, 'logins'), liveSubscription)),
)

/** Which of these operations are of an account that follows someone (a live subscription): one read. */
async function following(q: Queryable, es: readonly { payload: { login: number } }[]) {
  const logins = JSON.stringify([...new Set(es.map((e) => e.payload.login))])
  const followers = new Set((await followersIn(q, { logins })).rows.map((r) => Number(r[0])))
  return es.map((e) => followers.has(e.payload.login))
}

type Operation = PayloadOf<typeof BalanceOperation>

/**
 * Which of these operations copy trading takes: those of an account that follows someone, and every
 * withdrawal's hold and return (copier/holds.ts: the hold is kept until its outcome, and a subscription
 * may start while it waits).
 */
async function interest(q: Queryable, es: readonly { payload: Operation }[]) {
  const follows = await following(q, es)
  return es.map((e, i) => follows[i]! || !!e.payload.hold)
}

/** The balance operations that are capital flows (money in and out), and the reason that makes one not. */
export const FLOW_OPS: readonly string[] = ['OP_BALANCE_IN', 'OP_BALANCE_OUT']
export const NOT_A_FLOW_REASON = 'TR_REASON_COPY_REWARD'

/**
 * Money in or out of a follower account moves each live subscription's capital and high-water mark
 * (copier/flows.ts: deposits raise both; a withdrawal first charges the performance fee due, then lowers
 * the mark in proportion). Copy rewards are not flows; money held for a withdrawal moves the
 * subscriptions as a withdrawal, but the fee it charges waits for the payout, and its return undoes it
 * (copier/holds.ts). Written in the delivery's transaction, so exactly once per balance operation (a lost
 * after-step loses nothing; the accrual of a fee is settled after the commit, or by `copytrade.settle`).
 * With several subscriptions on one account each takes its share of a flow (domain/fees.ts: flowShare).
 */
export function flowConsumer(ctx: CopyCtx): Consumer<Operation> {
  const settle = settleAfterDelivery(ctx)
  return {
    name: FLOW_CONSUMER,
    topic: BalanceOperation,
    // money in and out; a copy reward is not a flow
    accepts: ({ payload: p }) => p.reason !== NOT_A_FLOW_REASON && FLOW_OPS.includes(p.op),
    // only the accounts that follow someone, and holds: known in the operation's own transaction, one
    // read for all the operations it writes (a subscription that starts later starts from the equity
    // after them)
    interested: interest,
    wants: (es) => interest(ctx.db, es),
    async handle(e, tx) {
      const flow = flowOf(e)
      const hold = e.payload.hold
      let ids: number[]
      if (!hold) ids = (await applyFlowTx(ctx, tx, flow)).ids
      else if (flow.out) ids = await holdTakenTx(ctx, tx, flow, hold)
      else
        ids = await holdDecidedTx(ctx, tx, hold, flow.login, {
          outcome: 'returned',
          outcomeBalanceBeforeMinor: flow.balanceBefore,
          outcomeAt: flow.until,
          amountMinor: flow.amount,
        })
      settle.keep(e.id, ids)
    },
    after: settle.after,
  }
}

/** What the fees on equity would charge now (GET /copytrade/subscription/{id}/fees). */
export async function feePreview(ctx: CopyCtx, sub: Sub) {
  const [m] = await ctx.db.select().from(copyMasters).where(eq(copyMasters.id, sub.masterId))
  const e = await copyEquity(ctx, sub, ctx.db, { managed: true })
  const d = 10 ** currencyDecimals(e.currency)
  const policy = rewardPolicyOf(sub)
  const perf =
    policy.reward_type === REWARD.PERFORMANCE_FEE_HWM
      ? performanceFee(e.equity, sub.hwmMinor, policy.percent).fee
      : 0
  const mgmt =
    policy?.reward_type === REWARD.MANAGEMENT_FEE ? managementFee(e.managed, policy.annual_percent, 1) : 0
  const [open] = await ctx.db
    .select({ n: sql<number>`count(*)` })
    .from(copyLinks)
    .where(and(eq(copyLinks.subscriptionId, sub.id), eq(copyLinks.status, 'open')))
  return {
    subscription_id: sub.id,
    currency: e.currency,
    copy_capital: e.capital / d,
    // the closes still to come here included: copy_equity is the documented sum of the figures shown
    copy_result: (sub.resultMinor + e.pending) / d,
    fees_paid: e.paid / d,
    fees_owed: e.owed / d,
    floating: e.floating / d,
    copy_equity: e.equity / d,
    managed_equity: e.managed / d,
    high_water_mark: sub.hwmMinor / d,
    performance_fee_now: perf / d,
    management_fee_per_day: mgmt / d,
    open_copies: open!.n,
    next_performance_fee_time: sub.nextPerfAt ? Math.floor(sub.nextPerfAt / 1000) : 0,
    // other terms keep a paid period's end, for terms that bring the fee back: none is due under them
    next_subscription_fee_time:
      sub.nextFeeAt && policy.reward_type === REWARD.SUBSCRIPTION_FEE ? Math.floor(sub.nextFeeAt / 1000) : 0,
    fee_clock_stopped_since: sub.pausedAt ? Math.floor(sub.pausedAt / 1000) : 0,
    terms: {
      ...policy,
      reward_name: REWARD_NAMES[sub.rewardType]!,
      version: sub.termsVersion,
      manual_trading_mode: sub.manualTradingMode,
    },
    terms_pending: !!m && m.policyVersion > sub.termsVersion,
    fees_apply: !!m && (await sameMode(ctx, sub.followerLogin, m.payoutLogin)),
  }
}
