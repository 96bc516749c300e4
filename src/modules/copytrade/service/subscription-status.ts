import { and, eq, gt, inArray, isNotNull, isNull, or, sql } from 'drizzle-orm'
import type { Tx } from '../../../kernel/db/client'
import type { Work } from '../../../kernel/db/unit-of-work'
import type { UseCase } from '../../../kernel/use-case'
import type { CopyCtx } from '../context'
import { closeLinks } from '../copier/close-copy'
import { feeClockStopTx, subscriptionEndTx } from '../copier/fees'
import { PAUSE_CANCELLED } from '../copier/link-states'
import { resyncSubscription } from '../copier/resync'
import { settleSoon } from '../copier/rewards'
import { nextStatus, SUB_STATUS, type SubAction } from '../domain/status'
import { copyLinks, copyMasters, copySubscriptions } from '../schema'
import { copyError } from './errors'

/** A master's follower count: its live (ACTIVE or PAUSED) subscriptions, in the writer's transaction. */
export async function recountFollowers(tx: Tx, masterIds: number[]) {
  for (const id of new Set(masterIds))
    await tx
      .update(copyMasters)
      .set({
        followers: sql`(select count(*) from copy_subscriptions where master_id = ${id} and status in (0, 1))`,
      })
      .where(eq(copyMasters.id, id))
}

/**
 * A stopped fee clock that runs again: the next subscription and performance fee dates move on by the
 * time it stood still (from `paused_at`, read in the statement), and management fees skip the days it
 * stood still throughout (the stop charged the days up to and including its own: feeClockStopTx).
 */
function clockRestart(now: number) {
  const stood = sql`max(0, ${now} - ${copySubscriptions.pausedAt})`
  return {
    nextFeeAt: sql`${copySubscriptions.nextFeeAt} + ${stood}`,
    nextPerfAt: sql`${copySubscriptions.nextPerfAt} + ${stood}`,
    mgmtDay: sql`max(${copySubscriptions.mgmtDay}, ${Math.floor(now / 86_400_000)})`,
    pausedAt: null,
  }
}

/**
 * No fee clock while paused or while the master is disabled (README: fees): either stops it
 * (`paused_at`, kept from whichever came first; what it owed up to then is charged in the same
 * transaction: feeClockStopTx), and once neither holds it runs again (clockRestart). A subscription that
 * ends with its clock stopped has its fee dates moved on as a restart would: no fee runs for it any more,
 * but a new subscription to the same master reads from it how long the period already paid still runs
 * (createSubscription), and that period stood still while paused.
 */
function feeClock(s: { pausedAt: number | null }, to: number, masterEnabled: boolean, now: number) {
  if (to !== SUB_STATUS.ACTIVE && to !== SUB_STATUS.PAUSED)
    return s.pausedAt === null ? {} : clockRestart(now)
  if (to === SUB_STATUS.PAUSED || !masterEnabled) return s.pausedAt === null ? { pausedAt: now } : {}
  return s.pausedAt === null ? {} : clockRestart(now)
}

/**
 * A master enabled or disabled (by its owner or staff): its ACTIVE subscriptions' fee clocks stop or run
 * on with it, in the transaction that writes the master (BEGIN IMMEDIATE: no resume interleaves). A stop
 * first charges what each running clock owed up to now (feeClockStopTx); a restart is one statement,
 * however many followers. The accruals, for the caller to settle after the commit.
 */
export async function masterFeeClockTx(ctx: CopyCtx, tx: Tx, masterId: number, enabled: boolean) {
  const now = ctx.clock.now()
  const live = and(eq(copySubscriptions.masterId, masterId), eq(copySubscriptions.status, SUB_STATUS.ACTIVE))
  const ids: number[] = []
  if (!enabled) {
    const [master] = await tx.select().from(copyMasters).where(eq(copyMasters.id, masterId))
    const running = await tx
      .select()
      .from(copySubscriptions)
      .where(and(live, isNull(copySubscriptions.pausedAt)))
    for (const s of master ? running : []) ids.push(...(await feeClockStopTx(ctx, tx, s, master!, now)))
  }
  await tx
    .update(copySubscriptions)
    .set(enabled ? clockRestart(now) : { pausedAt: now })
    .where(and(live, enabled ? isNotNull(copySubscriptions.pausedAt) : isNull(copySubscriptions.pausedAt)))
  return ids
}

/**
 * Moves subscriptions by `action` (domain/status.ts), conditional on the status each was read in. A
 * subscription that ends (DISABLED) has its open copies closed after the commit, as cTrader's "stop
 * copying" does: the follower is not left holding positions nobody manages.
 */
export async function moveSubscriptionsTx(
  ctx: CopyCtx,
  tx: Tx,
  work: Work,
  ids: number[],
  action: SubAction,
  reason: string,
) {
  if (ids.length === 0) return []
  const rows = await tx.select().from(copySubscriptions).where(inArray(copySubscriptions.id, ids))
  const masters = new Map(
    (
      await tx
        .select()
        .from(copyMasters)
        .where(inArray(copyMasters.id, [...new Set(rows.map((r) => r.masterId))]))
    ).map((m) => [m.id, m]),
  )
  const moved: number[] = []
  const fees: number[] = []
  const now = ctx.clock.now()
  for (const s of rows) {
    const to = nextStatus(s.status, action)
    if (to === null) continue
    const master = masters.get(s.masterId)
    const clock = feeClock(s, to, master?.enabled === 1, now)
    const done = await tx
      .update(copySubscriptions)
      .set({ status: to, statusReason: reason, updatedAt: now, ...clock })
      .where(and(eq(copySubscriptions.id, s.id), eq(copySubscriptions.status, s.status)))
      .returning({ id: copySubscriptions.id })
    if (done.length === 0) continue
    moved.push(s.id)
    // in the transaction of the move, so once: an end charges the performance fee on the gains so far
    // (whoever ends it), and a fee clock that stops here (a pause, an equity stop, an end) what it owed
    if (master && to === SUB_STATUS.DISABLED) fees.push(...(await subscriptionEndTx(ctx, tx, s, master, now)))
    else if (master && to === SUB_STATUS.PAUSED) fees.push(...(await feeClockStopTx(ctx, tx, s, master, now)))
  }
  if (fees.length > 0) work.after(`copy-fees:${fees.join(',')}`, () => settleSoon(ctx, fees))
  await recountFollowers(
    tx,
    rows.map((r) => r.masterId),
  )
  // the manual trading mode binds active subscriptions only: the followers' cached modes change now
  const followers = [...new Set(rows.filter((r) => moved.includes(r.id)).map((r) => r.followerLogin))]
  if (followers.length > 0) work.after(`copy-manual:${moved.join(',')}`, () => ctx.forgetManual(...followers))
  if (action === 'pause' && moved.length > 0) await cancelPendingCopiesTx(ctx, tx, work, moved)
  // an end, or an equity stop: the copies are closed
  if (action !== 'pause' && action !== 'resume' && moved.length > 0) {
    const closing = await tx
      .update(copyLinks)
      .set({ status: 'closing', reason, leaseUntil: 0, updatedAt: now })
      .where(
        and(
          inArray(copyLinks.subscriptionId, moved),
          // and a pause's cancel not done yet: closed now, whatever its copy became (a pause keeps a
          // copy that filled; an end does not)
          or(
            eq(copyLinks.status, 'open'),
            and(eq(copyLinks.status, 'closing'), eq(copyLinks.reason, PAUSE_CANCELLED)),
          ),
        ),
      )
      .returning({ id: copyLinks.id })
    // links decided but not yet opened are not opened any more
    await tx
      .update(copyLinks)
      .set({ status: 'skipped', reason: 'SUBSCRIPTION_NOT_ACTIVE', updatedAt: now })
      .where(and(inArray(copyLinks.subscriptionId, moved), eq(copyLinks.status, 'pending')))
    const linkIds = closing.map((l) => l.id)
    if (linkIds.length > 0) work.after(`copy-close:${moved.join(',')}`, () => closeLinks(ctx, linkIds))
  }
  return moved
}

/**
 * A pause copies nothing new: the subscriptions' pending copies not filled yet are cancelled after the
 * commit (a fill would be a new position). Their links keep the reason PAUSE_CANCELLED, by which the
 * master's fill after a resume copies the position (consumers.ts reviveAtFill). The follower orders are
 * read in this transaction: a copy that filled before it is a position, and stays.
 */
async function cancelPendingCopiesTx(ctx: CopyCtx, tx: Tx, work: Work, subIds: number[]) {
  const links = await tx
    .select({ id: copyLinks.id, ticket: copyLinks.followerTicket })
    .from(copyLinks)
    .where(
      and(
        inArray(copyLinks.subscriptionId, subIds),
        eq(copyLinks.status, 'open'),
        gt(copyLinks.masterCmd, 1),
      ),
    )
  if (links.length === 0) return
  const states = await ctx.trading.orderStates(
    links.flatMap((l) => (l.ticket === null ? [] : [l.ticket])),
    tx,
  )
  const still = links.filter((l) => l.ticket !== null && states.get(l.ticket)?.state === 'pending')
  if (still.length === 0) return
  const closing = await tx
    .update(copyLinks)
    .set({ status: 'closing', reason: PAUSE_CANCELLED, leaseUntil: 0, updatedAt: ctx.clock.now() })
    .where(
      and(
        inArray(
          copyLinks.id,
          still.map((l) => l.id),
        ),
        eq(copyLinks.status, 'open'),
      ),
    )
    .returning({ id: copyLinks.id })
  const ids = closing.map((l) => l.id)
  if (ids.length > 0) work.after(`copy-cancel:${subIds.join(',')}`, () => closeLinks(ctx, ids))
}

/**
 * Ends (or moves by `action`) every live subscription of a master, in the caller's unit of work: each end
 * charges what the follower's own end does (moveSubscriptionsTx), exactly once.
 */
export async function moveMasterSubscriptionsTx(
  ctx: CopyCtx,
  tx: Tx,
  work: Work,
  masterId: number,
  action: SubAction,
  reason: string,
) {
  const live = await tx
    .select({ id: copySubscriptions.id })
    .from(copySubscriptions)
    .where(
      and(
        eq(copySubscriptions.masterId, masterId),
        inArray(copySubscriptions.status, [SUB_STATUS.ACTIVE, SUB_STATUS.PAUSED]),
      ),
    )
  return moveSubscriptionsTx(
    ctx,
    tx,
    work,
    live.map((s) => s.id),
    action,
    reason,
  )
}

/** Pause, resume or disable one subscription (the customer's, or any of the brand for staff). */
export async function transition({
  ctx,
  subscription: sub,
  input: { action, reason },
}: UseCase<
  CopyCtx,
  { action: SubAction; reason: string },
  { subscription: { id: number; status: number } }
>) {
  if (nextStatus(sub.status, action) === null)
    throw copyError('INVALID_TRANSITION', `a subscription in status ${sub.status} cannot ${action}`)
  // an end's fees are charged where it commits (moveSubscriptionsTx: subscriptionEndTx)
  const moved = await ctx.uow.run((tx, work) => moveSubscriptionsTx(ctx, tx, work, [sub.id], action, reason))
  if (moved.length === 0)
    throw copyError('INVALID_TRANSITION', `subscription ${sub.id} changed meanwhile; read it again`)
  // what the master holds now is copied at the current price (spec 4.12; links skipped while paused too)
  if (action === 'resume') await resyncSubscription(ctx, sub.id)
}
