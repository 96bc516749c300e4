import { and, eq, gt, lte } from 'drizzle-orm'
import type { OrderRow } from '../book/positions'
import { refreshAfterCommit, type TradeRefresh } from '../commit/execution'
import type { TradingCtx } from '../context'
import { TradeExpired } from '../events'
import { orders } from '../schema'
import { tradeEvent } from '../views'

/**
 * Pending orders past their expiration become `expired`: each a conditional update, so an order filled
 * or changed meanwhile is left alone (and re-read: `refresh`).
 */
export async function expireDue(
  ctx: TradingCtx,
  due: { order: OrderRow; groupId: number }[],
  refreshes: TradeRefresh,
  refresh: (ticket: number) => Promise<void>,
  stats: { expired: number },
) {
  const nowS = Math.floor(ctx.clock.now() / 1000)
  for (const { order: o, groupId } of due) {
    const now = ctx.clock.now()
    const currency = (await ctx.accountsRead.group(groupId))?.currency ?? ''
    const row = await ctx.uow.run(async (tx, work) => {
      const [r] = await tx
        .update(orders)
        .set({
          state: 'expired',
          // never filled, nothing charged: the commission estimated when it was placed goes
          commission: 0,
          closeTime: now,
          closeReason: 'expiration',
          updatedAt: now,
          origin: ctx.origin,
        })
        .where(
          and(
            eq(orders.ticket, o.ticket),
            eq(orders.state, 'pending'),
            lte(orders.expiration, nowS),
            gt(orders.expiration, 0),
          ),
        )
        .returning()
      if (r) {
        work.emit(TradeExpired, o.brandId, tradeEvent(r, currency))
        refreshAfterCommit(work, refreshes, r)
      }
      return r
    })
    if (row) stats.expired++
    else await refresh(o.ticket)
  }
}
