import { and, eq } from 'drizzle-orm'
import type { UseCase } from '../../../kernel/use-case'
import { pricePositions } from '../book/exposure'
import { orders } from '../schema'
import { closePosition } from './close'
import {
  refuseManual,
  refuseStalePrices,
  type SessionScope,
  type TradingServices,
  tradingAccount,
} from './shared'

/** DELETE /trade/close/group: closes a login's open positions (all, only winners or only losers, of one symbol or every one) in one group commit. */
export async function closeGroup({
  ctx,
  brand,
  session,
  input,
}: UseCase<
  TradingServices,
  { login: number; type: number; symbol?: string; comment?: string },
  SessionScope
>) {
  const { account, group } = await tradingAccount(ctx, brand, session, input.login)
  await refuseManual(ctx, { session }, account.login, 'close')
  // the whole batch waits for current prices rather than each position being skipped
  refuseStalePrices(ctx)
  const open = await ctx.db
    .select()
    .from(orders)
    .where(
      and(
        eq(orders.login, account.login),
        eq(orders.state, 'open'),
        input.symbol ? eq(orders.symbol, input.symbol) : undefined,
      ),
    )
  const priced = (await pricePositions(ctx, account, group, open)) ?? []
  // and again once the prices are read: at the edge, reading them reads the engine's word that they are current
  refuseStalePrices(ctx)
  const each = { comment: input.comment !== undefined ? 'GROUP_CLOSE' : undefined }
  // submitted together: the group commit of closes takes them in one transaction
  const outcomes = await Promise.allSettled(
    priced
      .filter((p) => (input.type === 1 ? p.profit > 0 : input.type === -1 ? p.profit < 0 : true))
      .map(async (p) => {
        try {
          return await closePosition({
            ctx,
            brandId: brand.id,
            position: p.order,
            input: each,
            reason: 'group_close',
          })
        } catch (e) {
          // Spec 4.7: positions failing the close check are skipped; the batch still answers 200.
          ctx.logger.log('info', 'group close skipped a position', {
            ticket: p.order.ticket,
            reason: e instanceof Error ? e.message : String(e),
          })
          throw e
        }
      }),
  )
  const closed = outcomes.filter((o) => o.status === 'fulfilled').length
  return { data: 'OK' as const, closed }
}
