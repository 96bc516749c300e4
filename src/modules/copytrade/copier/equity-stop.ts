import { and, asc, eq, gt, or, sql } from 'drizzle-orm'
import { currencyDecimals } from '../../accounts'
import type { CopyCtx } from '../context'
import { equityStopReached } from '../domain/fees'
import type { SubscriptionSettings } from '../domain/settings'
import { SUB_STATUS } from '../domain/status'
import { copyLinks, copyRecords, copySubscriptions } from '../schema'
import { moveSubscriptionsTx } from '../service/subscription-status'
import { copyEquities } from './equity'

/** Subscriptions one page reads (every read of a page binds their ids: a few hundred at most). */
export const EQUITY_STOP_PAGE = 500

/**
 * Stops one run makes at the edge: each pauses its subscription and closes its copies (many subrequests
 * each, of the 1,000 a Worker's scheduled() invocation shares with every job due in it). The next run
 * starts at the first one left.
 */
export const EDGE_STOPS_PER_RUN = 5

/**
 * Where the next run at the edge starts (the last subscription id checked, in the shared cache): each run
 * checks one page after it, so every guarded subscription is checked within ceil(n / EQUITY_STOP_PAGE)
 * runs (a minute each at the edge). A day's expiry; lost (the cache away), the walk starts over.
 */
export const EQUITY_STOP_CURSOR = 'copytrade:equity-stops:cursor'
const CURSOR_TTL_MS = 86_400_000

/**
 * Equity stops (job): a subscription whose copies lost `equity_stop` of its capital (their results,
 * closed and floating; fees are not a loss of the copies) is PAUSED with the reason EQUITY_STOP, its
 * copies are closed, and a `stop` record says why. A PAUSED subscription still holding copies is guarded
 * too: a pause stops new copies, not the follower's loss limit on those it keeps.
 *
 * The guarded subscriptions are walked by id, a page at a time, each page's equity read in a handful of
 * set reads (copyEquities), whatever its size: a subscription with no copy open costs its part of them
 * only. On the Bun server every run checks them all, page after page. At the edge (a Worker's scheduled()
 * every minute, whose 1,000 subrequests all the jobs due share) a run checks one page after the cursor
 * (EQUITY_STOP_CURSOR) and makes at most EDGE_STOPS_PER_RUN stops: none is left unchecked by a fixed
 * order, and a quiet run costs a few subrequests.
 */
export async function runEquityStop(ctx: CopyCtx) {
  if (!ctx.edge) {
    let after = 0
    for (;;) {
      const page = await checkPage(ctx, after, Number.POSITIVE_INFINITY)
      if (page.done) return
      after = page.next
    }
  }
  const after = Number(await ctx.store.get(EQUITY_STOP_CURSOR)) || 0
  let page = await checkPage(ctx, after, EDGE_STOPS_PER_RUN)
  // past the last one (the last page was full): the walk starts over in this run, not the next
  if (page.checked === 0 && after > 0) page = await checkPage(ctx, 0, EDGE_STOPS_PER_RUN)
  await ctx.store.set(EQUITY_STOP_CURSOR, String(page.done ? 0 : page.next), CURSOR_TTL_MS)
}

/**
 * Checks the guarded subscriptions of the page after id `after`, and stops at most `maxStops` of those
 * that reached their stop. `next`: the id the next page starts after (before the first stop left);
 * `done`: none after this page; `checked`: the page's size (0: none after `after`).
 */
async function checkPage(ctx: CopyCtx, after: number, maxStops: number) {
  const holding = sql`exists (select 1 from ${copyLinks} where ${copyLinks.subscriptionId} = ${copySubscriptions.id}
    and ${copyLinks.status} = 'open')`
  const subs = await ctx.db
    .select()
    .from(copySubscriptions)
    .where(
      and(
        gt(copySubscriptions.id, after),
        or(
          eq(copySubscriptions.status, SUB_STATUS.ACTIVE),
          and(eq(copySubscriptions.status, SUB_STATUS.PAUSED), holding),
        ),
        sql`json_extract(${copySubscriptions.settings}, '$.equity_stop') > 0`,
      ),
    )
    .orderBy(asc(copySubscriptions.id))
    .limit(EQUITY_STOP_PAGE)
  if (subs.length === 0) return { next: after, done: true, checked: 0 }
  // the page's closes still to come, links, fees and followers' groups in a few set reads (copyEquities)
  const equities = await copyEquities(ctx, subs)
  let stops = 0
  for (const sub of subs) {
    const s = JSON.parse(sub.settings) as SubscriptionSettings
    const e = equities.get(sub.id)!
    // on what the copies made (capital + results): a fee, paid or waiting for the follower's free margin,
    // is what the follower agreed to pay, not a loss of the copies; it must not be what closes them
    const equity = e.equity + e.owed + e.paid
    if (
      !equityStopReached(e.capital, equity, s.equity_stop, s.equity_stop_type, currencyDecimals(e.currency))
    )
      continue
    // the run's stops are made: the next run starts at this one
    if (stops >= maxStops) return { next: sub.id - 1, done: false, checked: subs.length }
    stops++
    const now = ctx.clock.now()
    await ctx.uow.run(async (tx, work) => {
      const moved = await moveSubscriptionsTx(ctx, tx, work, [sub.id], 'equity_stop', 'EQUITY_STOP')
      if (moved.length === 0) return
      await tx
        .insert(copyRecords)
        .values({
          key: `stop:${sub.id}:${now}`,
          brandId: sub.brandId,
          subscriptionId: sub.id,
          action: 'stop',
          result: 'skipped',
          reason: 'EQUITY_STOP',
          message: `copy equity ${equity} against capital ${e.capital} reached the equity stop ${s.equity_stop}${s.equity_stop_type === 1 ? ' %' : ` ${e.currency}`}; copies closed, subscription paused`,
          symbol: '',
          masterTicket: 0,
          masterPrice: 0,
          masterTime: now,
          decidedAt: now,
          createdAt: now,
        })
        .onConflictDoNothing()
    })
  }
  return { next: subs[subs.length - 1]!.id, done: subs.length < EQUITY_STOP_PAGE, checked: subs.length }
}
