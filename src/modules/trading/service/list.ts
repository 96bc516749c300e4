import type { UseCase } from '../../../kernel/use-case'
import { roundToCurrency } from '../../accounts'
import { pricePositions } from '../book/exposure'
import { orderView } from '../views'
import { type SessionScope, type TradingServices, tradingAccount } from './shared'

/** GET /trade/list: open positions with their live profit, and pending orders. */
export async function listActive({
  ctx,
  brand,
  session,
  input,
}: UseCase<TradingServices, { login: number }, SessionScope>) {
  const { account, group } = await tradingAccount(ctx, brand, session, input.login)
  const active = await ctx.positions.active(account.login)
  const open = active.filter((o) => o.state === 'open')
  const priced = (await pricePositions(ctx, account, group, open)) ?? []
  const live = new Map(priced.map((p) => [p.order.ticket, p]))
  return {
    positions: open.map((o) => {
      const p = live.get(o.ticket)
      return orderView(
        o,
        group.currency,
        p && { profit: roundToCurrency(p.profit, group.currency), closePrice: p.closePrice },
      )
    }),
    orders: active.filter((o) => o.state === 'pending').map((o) => orderView(o, group.currency)),
  }
}
