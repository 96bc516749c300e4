import { and, eq, or, sql } from 'drizzle-orm'
import { currencyDecimals } from '../../accounts'
import type { CopyCtx } from '../context'
import { equityStopReached } from '../domain/fees'
import type { SubscriptionSettings } from '../domain/settings'
import { SUB_STATUS } from '../domain/status'
import { copyLinks, copyRecords, copySubscriptions } from '../schema'
import { moveSubscriptionsTx } from '../service/subscription-status'
import { closesToCome, copyEquity } from './equity'

/**
 * Equity stops (job): a subscription whose copies lost `equity_stop` of its capital (their results,
 * closed and floating; fees are not a loss of the copies) is PAUSED with the reason EQUITY_STOP, its
 * copies are closed, and a `stop` record says why. A PAUSED subscription still holding copies is guarded
 * too: a pause stops new copies, not the follower's loss limit on those it keeps.
 */
export async function runEquityStop(ctx: CopyCtx) {
  const holding = sql`exists (select 1 from ${copyLinks} where ${copyLinks.subscriptionId} = ${copySubscriptions.id}
    and ${copyLinks.status} = 'open')`
  const subs = await ctx.db
    .select()
    .from(copySubscriptions)
    .where(
      and(
        or(
          eq(copySubscriptions.status, SUB_STATUS.ACTIVE),
          and(eq(copySubscriptions.status, SUB_STATUS.PAUSED), holding),
        ),
        sql`json_extract(${copySubscriptions.settings}, '$.equity_stop') > 0`,
      ),
    )
    .limit(2000)
  // the closes still to come of the whole pass in one read (not one per subscription)
  const pending = await closesToCome(ctx, ctx.db, subs)
  for (const sub of subs) {
    const s = JSON.parse(sub.settings) as SubscriptionSettings
    const e = await copyEquity(ctx, sub, ctx.db, { pending: pending.get(sub.id) ?? 0 })
    // on what the copies made (capital + results): a fee, paid or waiting for the follower's free margin,
    // is what the follower agreed to pay, not a loss of the copies; it must not be what closes them
    const equity = e.equity + e.owed + e.paid
    if (
      !equityStopReached(e.capital, equity, s.equity_stop, s.equity_stop_type, currencyDecimals(e.currency))
    )
      continue
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
}
