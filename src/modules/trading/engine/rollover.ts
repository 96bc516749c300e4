import { and, eq } from 'drizzle-orm'
import { roundToMinor } from '../../accounts'
import type { OrderRow } from '../book/positions'
import { refreshAfterCommit, type TradeRefresh } from '../commit/execution'
import type { TradingCtx } from '../context'
import { isBuy, swapCharge } from '../domain/formulas'
import { SwapCharged } from '../events'
import { orders } from '../schema'
import { tradeEvent } from '../views'

const DAY_MS = 86_400_000
/** Resting orders the daily rollover looks at between two turns of the event loop. */
const ROLLOVER_SLICE = 2000

/**
 * Daily swap: at each UTC midnight every open position is charged the swap of the day that ended
 * (if its symbol traded that day), three times on the symbol's triple-swap weekday. Each position and
 * day is charged once (conditional on rollover_day).
 */
export async function rollover(
  ctx: TradingCtx,
  resting: Iterable<{ order: OrderRow; groupId: number }>,
  refreshes: TradeRefresh,
  refresh: (ticket: number) => Promise<void>,
) {
  const today = Math.floor(ctx.clock.now() / DAY_MS)
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
    if (!group || !gs || gs.info.swapEnable !== 1) continue
    let total = 0
    for (let d = o.rolloverDay + 1; d <= today; d++) {
      const weekday = new Date((d - 1) * DAY_MS).getUTCDay()
      if ((gs.info.sessionList[weekday]?.trade.length ?? 0) === 0) continue
      const days = weekday === gs.info.swapRollover3days ? 3 : 1
      const q = ctx.quotes.peek(o.symbol)
      const charge = swapCharge(
        gs.info,
        o.cmd,
        o.volume,
        q ? (isBuy(o.cmd) ? q.bid : q.ask) : o.openPrice,
        days,
        group.currency,
        lookup,
      )
      if (charge !== null) total += charge
    }
    const minor = roundToMinor(total, group.currency)
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
      if (r) {
        work.emit(SwapCharged, r.brandId, {
          ...tradeEvent(r, group.currency),
          charge_minor: minor,
          day: today,
        })
        refreshAfterCommit(work, refreshes, r)
      }
      return r
    })
    if (!row) await refresh(o.ticket)
  }
}
