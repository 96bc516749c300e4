import { and, asc, eq, inArray, isNull, lt } from 'drizzle-orm'
import type { CopyCtx } from '../context'
import { copiesCloses, type SubscriptionSettings } from '../domain/settings'
import { copyHolds, copyLinks, copySubscriptions } from '../schema'
import { closeLinks, partialCloseLinks } from './close-copy'
import { retryStops } from './modify-copy'
import { openLinks } from './open-copy'

type Link = typeof copyLinks.$inferSelect

const LIVE = new Set(['open', 'pending'])

/** A pending link this old was missed by its fan-out's executor (a crash, a failover): the job opens it. */
const PENDING_GRACE_MS = 3_000

/**
 * Links a run takes. At the edge (a Worker's scheduled() run) the invocation's 1,000 subrequests are shared
 * by every job it runs and an open costs about 16 of them (copier/resync.ts RESYNC_OPENS_IN_REQUEST): 20
 * there, the rest in the next runs (or the Bun engine's, 1,000 a run). The pending links a resync left for
 * this job (a master with more positions than a request opens) are among them. Opens and closes share it
 * (stale): each gets half when both have more waiting, and what one leaves the other takes.
 */
const RECONCILE_BATCH = { edge: 20, server: 1_000 } as const

/**
 * The copier's safety net (job `copytrade.reconcile`), every few seconds on one instance:
 * - pending links left by an executor that died or by a resync beyond what its request opens, and opens
 *   whose lease lapsed, are executed (an open taken over asks trading whether its key already opened:
 *   never twice);
 * - closes that failed (market closed, stale price) or whose executor died are tried again.
 * Each run takes the oldest of each, in fair shares of its batch: closes the market keeps refusing do not
 * hold up the opens behind them, nor the reverse.
 */
export async function reconcile(ctx: CopyCtx) {
  const now = ctx.clock.now()
  const batch = ctx.edge ? RECONCILE_BATCH.edge : RECONCILE_BATCH.server
  const [opens, closes] = await Promise.all([
    stale(ctx, ['pending', 'opening'], now, batch),
    stale(ctx, ['closing'], now, batch),
  ])
  const { opens: o, closes: c } = shares(opens.length, closes.length, batch)
  await openLinks(ctx, opens.slice(0, o))
  await closeLinks(ctx, closes.slice(0, c))
}

/** The links of these statuses left past PENDING_GRACE_MS and their lease, oldest first. */
async function stale(ctx: CopyCtx, statuses: Link['status'][], now: number, limit: number) {
  const rows = await ctx.db
    .select({ id: copyLinks.id })
    .from(copyLinks)
    .where(
      and(
        inArray(copyLinks.status, statuses),
        lt(copyLinks.updatedAt, now - PENDING_GRACE_MS),
        lt(copyLinks.leaseUntil, now),
      ),
    )
    .orderBy(asc(copyLinks.updatedAt), asc(copyLinks.id))
    .limit(limit)
  return rows.map((r) => r.id)
}

/** A run's batch between opens and closes: half each when both have more waiting, the rest to the other. */
export function shares(opens: number, closes: number, batch: number) {
  const o = Math.min(opens, Math.max(Math.ceil(batch / 2), batch - closes))
  return { opens: o, closes: Math.min(closes, batch - o) }
}

/** Links the events moved this recently are left to them. */
const AUDIT_AFTER_MS = 10_000

/**
 * The audit of open links against trading (job `copytrade.audit`, 30 s): a master position gone closes
 * the copy (a close event missed), one that shrank closes the same part, a follower position gone ends
 * the link, and a copy whose SL/TP change by the copier failed is given its master's levels (retryStops).
 * Links changed in the last 10 s are left to their events.
 */
export async function audit(ctx: CopyCtx) {
  const now = ctx.clock.now()
  await holdsWaiting(ctx, now)
  const rows = await ctx.db
    .select({ link: copyLinks, sub: copySubscriptions })
    .from(copyLinks)
    .innerJoin(copySubscriptions, eq(copySubscriptions.id, copyLinks.subscriptionId))
    .where(and(eq(copyLinks.status, 'open'), lt(copyLinks.updatedAt, now - AUDIT_AFTER_MS)))
    .limit(5000)
  if (rows.length === 0) return
  const open = rows.map((r) => r.link)
  const closes = new Map(
    rows.map((r) => [
      r.link.id,
      copiesCloses((JSON.parse(r.sub.settings) as SubscriptionSettings).copy_mode),
    ]),
  )
  const states = await ctx.trading.orderStates([
    ...new Set([...open.map((l) => l.masterTicket), ...open.map((l) => l.followerTicket!)]),
  ])
  const toClose: number[] = []
  for (const l of open) {
    const f = states.get(l.followerTicket!)
    // a pending order (the master's, or its copy) is as alive as a position
    if (!f || !LIVE.has(f.state)) {
      await ctx.db
        .update(copyLinks)
        .set({ status: 'ended', reason: 'CLOSED_ELSEWHERE', updatedAt: now })
        .where(and(eq(copyLinks.id, l.id), eq(copyLinks.status, 'open')))
      continue
    }
    const m = states.get(l.masterTicket)
    if (!closes.get(l.id)) {
      // OPEN_ONLY: the copy outlives the master's position, unlinked
      if (!m || !LIVE.has(m.state))
        await ctx.db
          .update(copyLinks)
          .set({ status: 'ended', reason: 'COPY_MODE', updatedAt: now })
          .where(and(eq(copyLinks.id, l.id), eq(copyLinks.status, 'open')))
      continue
    }
    if (!m || !LIVE.has(m.state)) {
      const moved = await ctx.db
        .update(copyLinks)
        .set({
          status: 'closing',
          reason: 'the master closed (reconciled)',
          leaseUntil: 0,
          masterClosePrice: m?.closePrice ?? null,
          masterCloseTime: m?.closeTime ?? null,
          updatedAt: now,
        })
        .where(and(eq(copyLinks.id, l.id), eq(copyLinks.status, 'open')))
        .returning({ id: copyLinks.id })
      if (moved.length > 0) toClose.push(l.id)
    } else if (m.state === 'open' && m.volume < l.masterVolume)
      await partialCloseLinks(ctx, [l], m.volume, m.closePrice, now)
  }
  await closeLinks(ctx, toClose)
  // SL/TP changes of the copier that failed: tried again with the master's levels now
  await retryStops(
    ctx,
    rows.filter((r) => !toClose.includes(r.link.id)),
    states,
  )
}

/** An outcome kept this long for a hold that has not arrived: the hold's delivery is failing. */
const HOLD_LATE_MS = 10 * 60_000

/**
 * Withdrawal outcomes still waiting for their hold (copier/holds.ts) after HOLD_LATE_MS: the hold's
 * delivery keeps failing or is parked in `dead_letters`, so the withdrawal's fee and capital wait too.
 * Logged for staff (retrying the dead letter resolves it); a hold waiting for its outcome is a
 * withdrawal not decided yet, which is nothing to report.
 */
async function holdsWaiting(ctx: CopyCtx, now: number) {
  const late = await ctx.db
    .select({ ref: copyHolds.ref, login: copyHolds.login, outcome: copyHolds.outcome })
    .from(copyHolds)
    .where(and(isNull(copyHolds.heldAt), lt(copyHolds.outcomeAt, now - HOLD_LATE_MS)))
    .limit(100)
  for (const h of late)
    ctx.logger.log('warn', 'copy trading: a withdrawal outcome waits for its hold', {
      hold: h.ref,
      login: h.login,
      outcome: h.outcome,
    })
}
