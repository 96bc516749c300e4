import { and, eq } from 'drizzle-orm'
import { roundToMinor } from '../../accounts'
import type { OrderRow } from '../book/positions'
import { refreshAfterCommit, type TradeRefresh } from '../commit/execution'
import type { TradingCtx } from '../context'
import { isBuy } from '../domain/formulas'
import { dayOf, settledThrough, swapDue } from '../domain/swap'
import { SwapCharged } from '../events'
import { orders } from '../schema'
import { tradeEvent } from '../views'

/** Resting orders the daily rollover looks at between two turns of the event loop. */
const ROLLOVER_SLICE = 2000

/**
 * Daily swap: at each UTC midnight every open position is charged the swap of the day that ended
 * (domain/swap.ts swapDue). Each position and day is charged once (conditional on rollover_day); a close
 * before this job reaches a position charges the days it owes itself (commit/execution.ts). A swap-free
 * symbol's positions have their day moved on without a charge or an event.
 */
export async function rollover(
  ctx: TradingCtx,
  resting: Iterable<{ order: OrderRow; groupId: number }>,
  refreshes: TradeRefresh,
  refresh: (ticket: number) => Promise<void>,
) {
  const today = dayOf(ctx.clock.now())
  const lookup = await ctx.market.quoteLookup()
  let scanned = 0
  // the live map, in slices: copying and scanning every resting order at once held the request thread
  // ~20 ms each minute at 150,000 positions (bench/trading.ts; the once-a-minute loop never warms up).
  // Entries added meanwhile are rolled already; the UPDATE below is conditional, so an order closed
  // meanwhile is left alone.
  for (const { order: o, groupId } of resting) {
    if (++scanned % ROLLOVER_SLICE === 0) await new Promise((r) => setImmediate(r))
    if (o.state !== 'open' || o.rolloverDay >= today) continue
    const group = await ctx.accountsRead.group(groupId)
    const gs = group && (await ctx.refdata.forGroup(groupId, o.symbol))
    if (!group || !gs) continue
    // a swap-free symbol's days are passed, not kept: switched back on, its swap runs from then on
    const q = ctx.quotes.peek(o.symbol)
    const price = q ? (isBuy(o.cmd) ? q.bid : q.ask) : o.openPrice
    const total = swapDue(gs.info, o, settledThrough(o), today, price, group.currency, lookup)
    const minor = roundToMinor(total, group.currency)
    const charged = gs.info.swapEnable === 1
    // every change that moves money or positions emits an event: the swap charged is one
    const row = await ctx.uow.run(async (tx, work) => {
      const [r] = await tx
        .update(orders)
        .set({
          storage: o.storage + minor,
          rolloverDay: today,
          updatedAt: ctx.clock.now(),
          origin: ctx.origin,
        })
        .where(
          and(
            eq(orders.ticket, o.ticket),
            eq(orders.state, 'open'),
            eq(orders.rolloverDay, o.rolloverDay),
            // a partial close since the book read moved part of the swap and volume to the closed part
            eq(orders.volume, o.volume),
            eq(orders.storage, o.storage),
          ),
        )
        .returning()
      if (r && charged) {
        work.emit(SwapCharged, r.brandId, {
          ...tradeEvent(r, group.currency),
          charge_minor: minor,
          day: today,
        })
      }
      if (r) refreshAfterCommit(work, refreshes, r)
      return r
    })
    if (!row) await refresh(o.ticket)
  }
}
