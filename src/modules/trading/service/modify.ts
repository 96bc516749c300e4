import { and, eq } from 'drizzle-orm'
import type { UseCase } from '../../../kernel/use-case'
import { isTradingOpen } from '../../market'
import { refreshAfterCommit } from '../commit/execution'
import { priorRequest, recordRequest, tradeKey } from '../commit/idempotency'
import { checkStops, levelsAt } from '../domain/checks'
import { isBuy } from '../domain/formulas'
import { refuse } from '../errors'
import { TradeModified } from '../events'
import { orders } from '../schema'
import { orderView, tradeEvent } from '../views'
import {
  type ActorScope,
  actorName,
  actorOrder,
  orderContext,
  readOnly,
  refresh,
  refuseManual,
  refuseOldQuote,
  refuseStalePrices,
  replayed,
  type TradingServices,
  tradableSymbol,
} from './shared'

/** The order's state changed between its read and the write: nothing was written. */
const CHANGED = Symbol('changed')

type ModifyCase = UseCase<TradingServices, { order: number; sl: number; tp: number }, ActorScope>

/**
 * PUT /trade/modify: new SL and TP of a position or a pending order, checked against the current quote (a
 * pending order: against its price). Written on the order as read only while it is in the state it was
 * read in (a partial close meanwhile does not matter: levels do not depend on the volume); a pending order
 * filled meanwhile is read again and checked once more as the position it became, and one no longer
 * active answers 404.
 */
export async function modifyOrder(uc: ModifyCase) {
  const first = await modifyOnce(uc)
  if (first !== CHANGED) return first
  const again = await modifyOnce(uc)
  if (again !== CHANGED) return again
  // a second change of state between a read and its write (in practice none: open only turns closed,
  // and the read before it would have answered 404)
  throw refuse('stopsRefused', `order ${uc.input.order} changed meanwhile; retry`)
}

async function modifyOnce({ ctx, brandId, actor, input, idempotencyKey }: ModifyCase) {
  const found = await actorOrder(ctx, brandId, actor, input.order)
  if (found.kind === 'hidden') throw refuse('modifyNotFound', `order ${input.order} not found`)
  if (found.kind === 'foreign') throw refuse('modifyNotYours', `order ${input.order} belongs to another user`)
  const o = found.order
  const key = tradeKey(idempotencyKey, 'modify', input)
  const oc = await orderContext(ctx, brandId, o)
  if (!oc) throw refuse('modifyNotFound', `order ${input.order} not found`)
  if (await priorRequest(ctx.db, o.login, key))
    return replayed({ data: 'OK' as const, trade: orderView(o, oc.group.currency) })
  await refuseManual(ctx, actor, o.login, 'modify', o.ticket)
  if (o.state !== 'open' && o.state !== 'pending')
    throw refuse('modifyNotFound', `order ${input.order} is not active`)
  // as an open or a close: an account that may not trade keeps its levels (a read-only prop account
  // cannot lift its stop loss)
  if (oc.account.enable !== 1 || oc.account.enableReadOnly === 1)
    throw refuse('modifyForbidden', oc.account.enable !== 1 ? 'account is disabled' : readOnly(oc.account))
  const fail = (m: string) => refuse('stopsRefused', m)
  // a position's levels are checked against the price it would close at: that price passes every check a
  // close's does (session, tradable, feed cut, max_quote_age: 503 PRICE_STALE), or nothing is changed. A
  // module mirroring levels a client set and trading checked (copy trading's copies of a master's stops)
  // is checked against the last price, as before: a refusal of a passing staleness would leave the copy
  // on its old stops for good (the module records it and does not ask again)
  const { gs, quote } =
    o.state !== 'open'
      ? await lastPrice(ctx, oc.group.id, o.symbol, true)
      : 'system' in actor
        ? await lastPrice(ctx, oc.group.id, o.symbol, false)
        : await tradableSymbol(ctx, oc.group, o.symbol, fail)
  const reference = o.state === 'pending' ? o.openPrice : isBuy(o.cmd) ? quote.bid : quote.ask
  const levels = levelsAt(input.sl, input.tp, gs.info.digits)
  if (!levels.ok) throw refuse('stopsRefused', levels.message)
  const { sl, tp } = levels
  const check = checkStops(o.cmd, sl, tp, reference, gs.info.stopsLevel, gs.info.digits)
  if (!check.ok) throw refuse('stopsRefused', check.message)
  const now = ctx.clock.now()
  const done = await ctx.uow.run(async (tx, work) => {
    if (await priorRequest(tx, o.login, key)) return { replay: true as const }
    const [r] = await tx
      .update(orders)
      .set({ sl, tp, updatedAt: now, origin: ctx.origin })
      .where(and(eq(orders.ticket, o.ticket), eq(orders.state, o.state)))
      .returning()
    if (r) {
      await recordRequest(tx, {
        login: o.login,
        key,
        kind: 'modify',
        ticket: o.ticket,
        actor: actorName(actor),
        now,
      })
      work.emit(TradeModified, brandId, tradeEvent(r, oc.group.currency))
      refreshAfterCommit(work, refresh(ctx), r)
    }
    return { row: r }
  })
  if ('replay' in done) return replayed({ data: 'OK' as const, trade: orderView(o, oc.group.currency) })
  if (!done.row) return CHANGED
  return { data: 'OK' as const, trade: orderView(done.row, oc.group.currency) }
}

/**
 * The group's last price of a symbol. `fresh` (a pending order's levels, checked against its own price):
 * not while this instance's prices are known stale (feed cut off, or, while its market is open, the
 * symbol's last quote past its max_quote_age: 503 PRICE_STALE), as placing it is not; its session need
 * not be open. Else however old (a module's mirrored levels, above).
 */
async function lastPrice(ctx: TradingServices, groupId: number, symbol: string, fresh: boolean) {
  const gs = await ctx.refdata.forGroup(groupId, symbol)
  const quote = gs && (await ctx.market.groupPrice(gs))
  if (fresh) refuseStalePrices(ctx)
  if (!gs || !quote) throw refuse('stopsRefused', `no price for ${symbol}`)
  if (fresh && isTradingOpen(gs.info.sessionList, ctx.clock.now())) refuseOldQuote(ctx, gs, quote)
  return { gs, quote }
}
