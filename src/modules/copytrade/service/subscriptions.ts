import { and, count, desc, eq, gt, inArray, isNull, lt, ne, notExists, sql } from 'drizzle-orm'
import type { Tx } from '../../../kernel/db/client'
import { isUniqueViolation } from '../../../kernel/db/errors'
import { undeliveredEvents } from '../../../kernel/events/undelivered'
import { invalid } from '../../../kernel/http/errors'
import type { UseCase } from '../../../kernel/use-case'
import { BalanceOperation, fromMinor, toMinor } from '../../accounts'
import { currenciesOf, currencyOf } from '../accounts-of'
import type { CopyCtx } from '../context'
import { allocations, COPY_CLOSE_CONSUMERS, COPY_CLOSES } from '../copier/equity'
import { closeTermsTx, FLOW_OPS, NOT_A_FLOW_REASON, perfPeriodEnd } from '../copier/fees'
import { FLOW_CONSUMER } from '../copier/holds'
import { copiesPending, resyncSubscription } from '../copier/resync'
import { feePeriodStart, settleSoon, subscriptionFeesTx } from '../copier/rewards'
import { REWARD } from '../domain/rewards'
import { followerModeAllowed } from '../domain/settings'
import { SUB_STATUS } from '../domain/status'
import {
  copyLinks,
  copyMasters,
  copyRecords,
  copyRewards,
  copySubscriptions,
  liveSubscription,
} from '../schema'
import { recordView, rewardView, subscriptionView } from '../views'
import { copyError } from './errors'
import { ownFollower, parseSettings, SETTINGS_WRITE_TRIES } from './followers'
import { masterById, type Owner, type OwnerScope } from './masters'
import { accountMode } from './ownership'
import { recountFollowers, transition } from './subscription-status'

/** Rules 5-8 of spec 4.12, then the subscription with the follower's defaults under the body's settings. */
export async function createSubscription({
  ctx,
  owner: o,
  input,
}: UseCase<CopyCtx, { follower_login: number; master_id: number } & Record<string, unknown>, OwnerScope>) {
  const { follower_login, master_id, capital, policy_version, customer_id: _ignored, ...rest } = input
  const { follower, group } = await ownFollower(ctx, o, follower_login)
  const master = await masterById(ctx, o.brandId, master_id)
  if (master.enabled !== 1 || (master.public !== 1 && master.customerId !== o.customerId))
    throw copyError('MASTER_NOT_AVAILABLE', `master ${master_id} is not open to followers`)
  // the terms stored below are those of this read, and the version the follower accepted
  if (policy_version !== master.policyVersion)
    throw copyError(
      'TERMS_CHANGED',
      `policy_version: the master's terms are at version ${master.policyVersion}; read them again`,
    )
  if (master.login === follower_login)
    throw copyError('SELF_COPY', 'follower_login: an account cannot copy itself')
  // its fees would be paid with money that is not the customer's (a prop challenge's capital)
  const managed = await ctx.accounts.managedFunds(follower_login)
  if (managed) throw copyError('INVALID_ACCOUNT', `follower_login: ${managed}`)
  if (!followerModeAllowed(master.allowedFollowerModes, accountMode(group)))
    throw copyError(
      'FOLLOWER_MODE_NOT_ALLOWED',
      `follower_login: the master does not take ${accountMode(group)} followers`,
    )
  const settings = await parseSettings(ctx, { ...JSON.parse(follower.defaults), ...rest })
  const alreadySubscribed = () =>
    copyError('ALREADY_SUBSCRIBED', `follower_login: ${follower_login} already follows master ${master_id}`)
  // before its capital is weighed: the money the account's subscription to this master manages is taken
  const [same] = await ctx.db
    .select({ id: copySubscriptions.id })
    .from(copySubscriptions)
    .where(
      and(
        eq(copySubscriptions.followerLogin, follower_login),
        eq(copySubscriptions.masterId, master.id),
        liveSubscription,
      ),
    )
  if (same) throw alreadySubscribed()
  const account = (await ctx.accounts.read.account(follower_login))!
  // the balance read counts every money move committed; what the subscriptions manage counts them once
  // delivered here: the new capital is weighed only against subscriptions that have them all
  await movesApplied(ctx, follower_login)
  // the capital allocated to this subscription: what no other subscription of the account manages, or the
  // share of it asked (two subscriptions on the same money would each charge fees and size copies on it)
  const unallocated = Math.max(0, account.balance - (await allocatedTo(ctx.db, follower_login)))
  const asked = typeof capital === 'number' ? (toMinor(capital, group.currency) ?? Number.NaN) : null
  const tooMuch = (limit: number, balance: number) =>
    invalid(
      `capital: between 0 and ${fromMinor(limit, group.currency)} (the balance ${fromMinor(balance, group.currency)} less what the account's other subscriptions manage)`,
    )
  const capitalOf = (left: number, balance: number) => {
    const c = asked ?? left
    if (!Number.isSafeInteger(c) || c <= 0 || c > left) throw tooMuch(left, balance)
    return c
  }
  capitalOf(unallocated, account.balance)
  const now = ctx.clock.now()
  // a period already paid under an earlier subscription to this master is not charged again: its next
  // fee date (moved on by a pause), or the end of the last period a fee paid (its terms changed since)
  const [paid] = await ctx.db
    .select({ nextFeeAt: copySubscriptions.nextFeeAt })
    .from(copySubscriptions)
    .where(
      and(
        eq(copySubscriptions.followerLogin, follower_login),
        eq(copySubscriptions.masterId, master.id),
        // whatever its terms now: other terms keep the end of a period paid
        gt(copySubscriptions.nextFeeAt, now),
      ),
    )
    .orderBy(desc(copySubscriptions.nextFeeAt))
    .limit(1)
  const paidUntil = Math.max(paid?.nextFeeAt ?? 0, await feePaidUntil(ctx, follower_login, master.id))
  let sub: typeof copySubscriptions.$inferSelect
  let fees: number[]
  try {
    const created = await ctx.db.transaction(async (tx) => {
      // the master as it is where the subscription is written: one disabled (or whose terms changed)
      // since the read would start a fee clock nobody stops
      const [now_] = await tx
        .select({ enabled: copyMasters.enabled, version: copyMasters.policyVersion })
        .from(copyMasters)
        .where(eq(copyMasters.id, master.id))
      if (now_?.enabled !== 1)
        throw copyError('MASTER_NOT_AVAILABLE', `master ${master_id} is not open to followers`)
      if (now_.version !== master.policyVersion)
        throw copyError('TERMS_CHANGED', `policy_version: the master's terms changed; read them again`)
      // and the money as it is there, one state: the balance, the moves applied to the subscriptions, what
      // they manage (two subscriptions at once do not both take it; a move since the first look is seen)
      if (await movesPending(tx, follower_login)) throw settling(follower_login)
      const balance = (await ctx.accounts.fundsOf(tx, [follower_login])).get(follower_login)?.balance ?? 0
      const allocated = capitalOf(Math.max(0, balance - (await allocatedTo(tx, follower_login))), balance)
      // the management fee's days an earlier subscription of this account to this master paid (an end
      // charges its day in full): an end and a new subscription the same day charge that day once
      const [{ paidDays }] = await tx
        .select({ paidDays: sql<number | null>`max(${copySubscriptions.mgmtDay})` })
        .from(copySubscriptions)
        .where(
          and(eq(copySubscriptions.followerLogin, follower_login), eq(copySubscriptions.masterId, master.id)),
        )
      const [row] = await tx
        .insert(copySubscriptions)
        .values({
          brandId: o.brandId,
          customerId: o.customerId,
          followerLogin: follower_login,
          masterId: master.id,
          masterLogin: master.login,
          status: SUB_STATUS.ACTIVE,
          settings: JSON.stringify(settings),
          // the terms it accepts: the master's policy now; a later change needs its acceptance
          rewardType: master.rewardType,
          rewardParams: master.rewardParams,
          termsVersion: master.policyVersion,
          manualTradingMode: master.manualTradingMode,
          startBalanceMinor: allocated,
          capitalMinor: allocated,
          hwmMinor: allocated,
          // under other terms, the end of a period already paid, for terms that bring the fee back
          nextFeeAt:
            master.rewardType === REWARD.SUBSCRIPTION_FEE
              ? Math.max(now, paidUntil)
              : paidUntil > now
                ? paidUntil
                : null,
          nextPerfAt: perfPeriodEnd(master, now),
          mgmtDay: Math.max(Math.floor(now / 86_400_000), paidDays ?? 0),
          createdAt: now,
          updatedAt: now,
        })
        .returning()
      await recountFollowers(tx, [master.id])
      // SUBSCRIPTION_FEE's first period is due at subscribing: accrued here, under the key the job would
      // use (the job finds it paid), so an end before the job runs still pays it
      const fee = await subscriptionFeesTx(ctx, tx, row!, master, now)
      return { row: { ...row!, nextFeeAt: fee.nextFeeAt }, fees: fee.ids }
    })
    sub = created.row
    fees = created.fees
  } catch (e) {
    if (isUniqueViolation(e)) throw alreadySubscribed()
    throw e
  }
  // committed: a payment waiting for the follower's free margin stays pending for copytrade.settle
  if (fees.length > 0) await settleSoon(ctx, fees)
  await ctx.forgetManual(follower_login)
  // the master's positions open now are copied at the current price (rules of copier/resync.ts)
  await resyncSubscription(ctx, sub.id)
  return {
    ...subscriptionView(sub, group.currency, master),
    copies_pending: await copiesPending(ctx, sub.id),
  }
}

/**
 * Accepts the master's current terms (`version` must be the one the follower saw): from now on the
 * subscription's fees are charged on its reward policy, and its manual_trading_mode binds the follower. A
 * new fee schedule starts today when the reward policy is another, after the old one is charged up to now
 * in the same transaction (copier/fees.ts: closeTermsTx); a change of the mode alone keeps it.
 */
export async function acceptTerms({
  ctx,
  owner: o,
  id,
  input: { version },
}: UseCase<CopyCtx, { version: number }, OwnerScope & { id: number }>) {
  const s = await ownSubscription(ctx, o, id)
  if (s.status === SUB_STATUS.DISABLED)
    throw copyError('INVALID_TRANSITION', `subscription ${id} is disabled; create a new one`)
  const master = await masterById(ctx, o.brandId, s.masterId)
  if (version !== master.policyVersion)
    throw copyError(
      'TERMS_CHANGED',
      `version: the master's terms are at version ${master.policyVersion}; read them again`,
    )
  const now = ctx.clock.now()
  const samePolicy = master.rewardType === s.rewardType && master.rewardParams === s.rewardParams
  // the terms replaced are settled on themselves first (copier/fees.ts), and the mark starts anew: on
  // realized results only, so with no copy open (a copy's result would be charged again, or never, by a
  // per-trade fee of the other terms)
  if (!samePolicy && (await openCopies(ctx, s.id)) > 0)
    throw copyError(
      'INVALID_TRANSITION',
      `subscription ${id} has open copies: another reward policy is accepted once they are closed`,
    )
  // nor while a copy's close is on its way here: its result (its per-trade fee, the gains the old terms'
  // performance fee charges) belongs to the terms it closed under, and is charged on what the
  // subscription's terms are when it is delivered. Waited for as a new subscription waits (3 s), then 409
  // ACCOUNT_SETTLING
  if (!samePolicy) await movesApplied(ctx, s.followerLogin)
  // new periods start when the fee clock runs: now, or when it stopped (its restart moves them on from there)
  const clockAt = s.pausedAt ?? now
  // of any subscription of the account to this master, as a new subscription reads it
  const paidUntil = await feePaidUntil(ctx, s.followerLogin, s.masterId)
  const unchanged = and(
    eq(copySubscriptions.id, s.id),
    // still live: one ended meanwhile keeps the terms it ended on
    liveSubscription,
    eq(copySubscriptions.termsVersion, s.termsVersion),
    // the fee clock it read (its new periods start from it): a master enabled meanwhile moved it
    s.pausedAt === null ? isNull(copySubscriptions.pausedAt) : eq(copySubscriptions.pausedAt, s.pausedAt),
  )
  // the old terms are charged and the new ones take over in one transaction: a switch that loses a race
  // (a copy opened by another instance's copier, a flow, a pause) charges nothing early
  const changed = () => copyError('INVALID_TRANSITION', `subscription ${id} changed meanwhile; read it again`)
  const done = await ctx.db.transaction(async (tx) => {
    let closed: Awaited<ReturnType<typeof closeTermsTx>> = null
    if (!samePolicy) {
      // the subscription as it stands, with no copy live (another instance's copier may have opened one)
      const [cur] = await tx
        .select()
        .from(copySubscriptions)
        .where(and(unchanged, notExists(tx.select({ one: sql`1` }).from(copyLinks).where(liveCopyOf(s.id)))))
      if (!cur) throw changed()
      // and no close of a copy (nor money move) committed and not yet delivered here, read where the
      // terms change: a delivery after this commit finds the new terms, so none may be on its way
      if (await movesPending(tx, s.followerLogin)) throw settling(s.followerLogin)
      closed = await closeTermsTx(ctx, tx, cur, master, master.policyVersion, now)
      if (!closed) throw changed()
    }
    const [row] = await tx
      .update(copySubscriptions)
      .set({
        termsVersion: master.policyVersion,
        manualTradingMode: master.manualTradingMode,
        updatedAt: now,
        ...(!closed
          ? {}
          : {
              hwmMinor: closed.hwm,
              rewardType: master.rewardType,
              rewardParams: master.rewardParams,
              // a period a subscription fee paid runs on whatever the terms: other terms keep its end
              // (moved on by pauses, as the fee clock is: subscription-status.ts), and a subscription
              // fee again starts its next period there, or from the fee key when that is later
              // (the period that came due by now was charged on the old terms: closeTermsTx moved it on)
              nextFeeAt:
                master.rewardType === REWARD.SUBSCRIPTION_FEE
                  ? s.rewardType === REWARD.SUBSCRIPTION_FEE && closed.nextFeeAt !== null
                    ? closed.nextFeeAt
                    : Math.max(clockAt, paidUntil, closed.nextFeeAt ?? 0)
                  : closed.nextFeeAt,
              nextPerfAt: perfPeriodEnd(master, clockAt),
              // from today, or from the day after the days the old terms charged (today included)
              mgmtDay: sql`max(${copySubscriptions.mgmtDay}, ${Math.floor(now / 86_400_000)})`,
            }),
      })
      .where(unchanged)
      .returning()
    // thrown, so what the old terms accrued is rolled back with it
    if (!row) throw changed()
    return { row, ids: closed?.ids ?? [] }
  })
  // committed: a settlement that fails now stays pending for copytrade.settle, the answer is the switch
  if (done.ids.length > 0) await settleSoon(ctx, done.ids)
  await ctx.forgetManual(s.followerLogin)
  return subscriptionView(done.row, await currencyOf(ctx, s.followerLogin, 'USD'), master)
}

/** The events whose delivery here moves what an account's subscriptions manage: money in and out, copies' results. */
const FLOWS = [BalanceOperation.name]
const SETTLING_WAIT_MS = 3_000

const settling = (login: number) =>
  copyError(
    'ACCOUNT_SETTLING',
    `follower_login: money moves of ${login} are still being applied to its subscriptions; retry shortly`,
  )

/**
 * Whether a money move of the account committed so far is not yet applied to its live subscriptions: a
 * flow copy trading takes (money in or out, not a copy reward: flowConsumer's `accepts`) of an account that
 * follows, or a close of one of its copies. Events copy trading passes over (its own trades' closes, a
 * credit) get no delivery row here and would wait on other consumers. None without a live subscription.
 */
async function movesPending(q: Pick<Tx, 'select' | 'all'>, login: number) {
  const [live] = await q
    .select({ id: copySubscriptions.id })
    .from(copySubscriptions)
    .where(and(eq(copySubscriptions.followerLogin, login), liveSubscription))
    .limit(1)
  if (!live) return false
  const flows = sql`json_extract(o.payload, '$.op') in (${sql.join(
    FLOW_OPS.map((op) => sql`${op}`),
    sql`, `,
  )}) and json_extract(o.payload, '$.reason') != ${NOT_A_FLOW_REASON}`
  const ofCopies = sql`json_extract(o.payload, '$.ticket') in (select l.follower_ticket from copy_links l
    join copy_subscriptions s on s.id = l.subscription_id where s.follower_login = ${login} and s.status in (0, 1))`
  // a flow or a close parked in dead letters is still to come too (staff's retry delivers it): its money is
  // in the balance, not in the subscriptions' capital or result, until then (a new subscription would take
  // a deposit the retry then gives the others too)
  return (
    (
      await undeliveredEvents(q, {
        consumers: [FLOW_CONSUMER],
        topics: FLOWS,
        path: '$.login',
        values: [login],
        also: flows,
        parked: true,
        limit: 1,
      })
    ).length > 0 ||
    (
      await undeliveredEvents(q, {
        consumers: COPY_CLOSE_CONSUMERS,
        topics: COPY_CLOSES,
        path: '$.login',
        values: [login],
        also: ofCopies,
        parked: true,
        limit: 1,
      })
    ).length > 0
  )
}

/**
 * Waits (up to 3 s, polling less often as it goes) until the account's money moves are applied. The bound
 * is elapsed time (the monotonic clock), not a time of the business clock: the request is what waits.
 */
async function movesApplied(ctx: CopyCtx, login: number) {
  const until = performance.now() + SETTLING_WAIT_MS
  for (let pause = 25; await movesPending(ctx.db, login); pause = Math.min(pause * 2, 400)) {
    if (performance.now() >= until) throw settling(login)
    await new Promise((resolve) => setTimeout(resolve, pause))
  }
}

/**
 * The end of the last period a subscription fee paid to this master from this follower account (by any of
 * its subscriptions): a fee's key names its period's start, its base the period's days. 0 for none.
 */
async function feePaidUntil(ctx: CopyCtx, followerLogin: number, masterId: number) {
  const fees = await ctx.db
    .select({ key: copyRewards.key, days: copyRewards.base })
    .from(copyRewards)
    .where(
      and(
        eq(copyRewards.followerLogin, followerLogin),
        eq(copyRewards.masterId, masterId),
        eq(copyRewards.rewardType, REWARD.SUBSCRIPTION_FEE),
        inArray(copyRewards.status, ['pending', 'settled']),
      ),
    )
  return Math.max(0, ...fees.map((f) => feePeriodStart(f.key) + f.days * 86_400_000))
}

/** What an account's live subscriptions manage together (copier/equity.ts: allocations). */
async function allocatedTo(q: Pick<Tx, 'select'>, login: number) {
  return (await allocations(q, [login])).get(login)?.total ?? 0
}

/** A copy with a position, or about to have one (its open or close is on its way). */
const liveCopyOf = (subId: number) =>
  and(
    eq(copyLinks.subscriptionId, subId),
    inArray(copyLinks.status, ['pending', 'opening', 'open', 'closing']),
  )

const openCopies = async (ctx: CopyCtx, subId: number) =>
  (await ctx.db.select({ n: count() }).from(copyLinks).where(liveCopyOf(subId)))[0]!.n

/** A subscription of the customer (rule 5): another customer's is PERMISSION_DENIED, another brand's 404. */
export async function ownSubscription(ctx: CopyCtx, o: Owner, id: number) {
  const [s] = await ctx.db
    .select()
    .from(copySubscriptions)
    .where(and(eq(copySubscriptions.id, id), eq(copySubscriptions.brandId, o.brandId)))
  if (!s) throw copyError('SUBSCRIPTION_NOT_FOUND', `subscription ${id} not found`)
  if (s.customerId !== o.customerId) throw copyError('PERMISSION_DENIED', `subscription ${id} is not yours`)
  return s
}

export async function subscriptionDetail({
  ctx,
  owner: o,
  id,
}: UseCase<CopyCtx, undefined, OwnerScope & { id: number }>) {
  const s = await ownSubscription(ctx, o, id)
  return subscriptionView(
    s,
    await currencyOf(ctx, s.followerLogin, 'USD'),
    await masterVersion(ctx, s.masterId),
  )
}

const masterVersion = async (ctx: CopyCtx, id: number) =>
  (
    await ctx.db
      .select({ policyVersion: copyMasters.policyVersion })
      .from(copyMasters)
      .where(eq(copyMasters.id, id))
  )[0]

/** New settings apply to the next copies; the master's open positions not yet linked are copied now. */
export async function updateSubscription({
  ctx,
  owner: o,
  id,
  input,
}: UseCase<CopyCtx, Record<string, unknown>, OwnerScope & { id: number }>) {
  const { customer_id: _ignored, ...rest } = input
  // merged onto the settings read and written only over them, while the subscription is not disabled: a
  // change another request committed since is read again and kept (both answered 200 are both kept), a
  // few times, then 409; a disable committed since is read again and answered 409 as one before the read
  let row: typeof copySubscriptions.$inferSelect | undefined
  let s = await ownSubscription(ctx, o, id)
  for (let attempt = 1; ; attempt++) {
    if (s.status === SUB_STATUS.DISABLED)
      throw copyError('INVALID_TRANSITION', `subscription ${id} is disabled; create a new one`)
    const settings = await parseSettings(ctx, { ...JSON.parse(s.settings), ...rest })
    ;[row] = await ctx.db
      .update(copySubscriptions)
      .set({ settings: JSON.stringify(settings), updatedAt: ctx.clock.now() })
      // nor over a disable committed since the read (DISABLED is final: read again and answered 409 above)
      .where(
        and(
          eq(copySubscriptions.id, s.id),
          eq(copySubscriptions.settings, s.settings),
          ne(copySubscriptions.status, SUB_STATUS.DISABLED),
        ),
      )
      .returning()
    if (row) break
    s = await ownSubscription(ctx, o, id)
    if (attempt >= SETTINGS_WRITE_TRIES && s.status !== SUB_STATUS.DISABLED)
      throw copyError('INVALID_TRANSITION', `subscription ${id} changed meanwhile; read it again`)
  }
  if (row.status === SUB_STATUS.ACTIVE) await resyncSubscription(ctx, s.id)
  return {
    ...subscriptionView(
      row,
      await currencyOf(ctx, s.followerLogin, 'USD'),
      await masterVersion(ctx, s.masterId),
    ),
    copies_pending: await copiesPending(ctx, s.id),
  }
}

/**
 * The customer's pause, resume or disable of a subscription (subscription-status.ts: transition), answered
 * with the subscription as it is then and its copies still to come (a resume's resync may leave some to
 * copytrade.reconcile).
 */
export async function moveSubscription({
  ctx,
  owner: o,
  id,
  input: { action, reason },
}: UseCase<
  CopyCtx,
  { action: 'pause' | 'resume' | 'disable'; reason: string },
  OwnerScope & { id: number }
>) {
  const s = await ownSubscription(ctx, o, id)
  await transition({ ctx, subscription: s, input: { action, reason } })
  return {
    ...(await subscriptionDetail({ ctx, owner: o, id: s.id })),
    copies_pending: await copiesPending(ctx, s.id),
  }
}

/** Pages of the customer's subscription list (GET /copytrade/subscriptions). */
// the default is the largest page: a client that does not page (the list had none) keeps every row it can
export const SUBSCRIPTIONS_PAGE = { default: 500, max: 500 } as const

/**
 * The customer's subscriptions, newest first, a page at a time (`before`: the `next_before` of the page
 * before). The page's currencies and its masters' policy versions come in two reads, whatever its size.
 */
export async function mySubscriptions({
  ctx,
  owner: o,
  input: q,
}: UseCase<CopyCtx, { limit?: number; before?: number }, OwnerScope>) {
  const limit = q.limit ?? SUBSCRIPTIONS_PAGE.default
  const rows = await ctx.db
    .select({ s: copySubscriptions, policyVersion: copyMasters.policyVersion })
    .from(copySubscriptions)
    .leftJoin(copyMasters, eq(copyMasters.id, copySubscriptions.masterId))
    .where(
      and(
        eq(copySubscriptions.brandId, o.brandId),
        eq(copySubscriptions.customerId, o.customerId),
        q.before ? lt(copySubscriptions.id, q.before) : undefined,
      ),
    )
    .orderBy(desc(copySubscriptions.id))
    .limit(limit + 1)
  const page = rows.slice(0, limit)
  const currency = await currenciesOf(
    ctx,
    page.map((r) => r.s.followerLogin),
    'USD',
  )
  return {
    rows: page.map(({ s, policyVersion }) =>
      subscriptionView(s, currency(s.followerLogin), policyVersion === null ? undefined : { policyVersion }),
    ),
    next_before: rows.length > limit ? rows[limit - 1]!.s.id : 0,
  }
}

/** What the copier did for a subscription, newest first (copied and skipped, with why). */
export async function subscriptionRecords({
  ctx,
  owner: o,
  id,
  input: q,
}: UseCase<
  CopyCtx,
  { result?: 'copied' | 'skipped'; before?: number; limit?: number },
  OwnerScope & { id: number }
>) {
  const s = await ownSubscription(ctx, o, id)
  const limit = q.limit ?? 100
  const rows = await ctx.db
    .select()
    .from(copyRecords)
    .where(
      and(
        eq(copyRecords.subscriptionId, s.id),
        q.result ? eq(copyRecords.result, q.result) : undefined,
        q.before ? lt(copyRecords.id, q.before) : undefined,
      ),
    )
    .orderBy(desc(copyRecords.id))
    .limit(limit + 1)
  const currency = await currencyOf(ctx, s.followerLogin, 'USD')
  return {
    rows: rows.slice(0, limit).map((r) => recordView(r, currency)),
    next_before: rows.length > limit ? rows[limit - 1]!.id : 0,
  }
}

export async function subscriptionRewards({
  ctx,
  owner: o,
  id,
}: UseCase<CopyCtx, undefined, OwnerScope & { id: number }>) {
  const s = await ownSubscription(ctx, o, id)
  const [rows, [master]] = await Promise.all([
    ctx.db
      .select()
      .from(copyRewards)
      .where(eq(copyRewards.subscriptionId, s.id))
      .orderBy(desc(copyRewards.id))
      .limit(500),
    ctx.db
      .select({ customerId: copyMasters.customerId })
      .from(copyMasters)
      .where(eq(copyMasters.id, s.masterId)),
  ])
  // the master's payout account is another customer's: shown only when the follower owns the master too
  const payoutLogin = master?.customerId === o.customerId
  return { rows: rows.map((r) => rewardView(r, { payoutLogin })) }
}
