import { eq } from 'drizzle-orm'
import { invalid, isRefused } from '../../../kernel/http/errors'
import type { UseCase } from '../../../kernel/use-case'
import { type AccountRecord, type GroupRecord, roundToMinor } from '../../accounts'
import { priorRequest, tradeKey } from '../commit/idempotency'
import { type OpenRequest, openError } from '../commit/open-commit'
import {
  checkPendingPrice,
  checkStops,
  checkVolume,
  directionClosed,
  isPendingCmd,
  levelsAt,
  pendingExpiration,
} from '../domain/checks'
import { commission as commissionOf, isBuy, marginInAccount } from '../domain/formulas'
import { dayOf } from '../domain/swap'
import { orders } from '../schema'
import { orderView } from '../views'
import {
  actorName,
  fillRates,
  type OpenInput,
  readOnly,
  refuseManual,
  replayed,
  type SessionScope,
  type TradingServices,
  tradableSymbol,
  tradingAccount,
} from './shared'

/** POST /trade/open: the session's account, then the shared core. */
export async function openOrder({
  ctx,
  brand,
  session,
  input,
  idempotencyKey,
}: UseCase<TradingServices, OpenInput, SessionScope & { idempotencyKey?: string }>) {
  const { account, group } = await tradingAccount(ctx, brand, session, input.login)
  await refuseManual(ctx, { session }, account.login, 'open')
  return openFor({
    ctx,
    brandId: brand.id,
    account,
    group,
    input,
    actor: actorName({ session }),
    idempotencyKey,
  })
}

/**
 * Opens a position or places a pending order on an account already resolved (by the session's scope or
 * the write port's brand): every check of a trade, then the group commit. With a key, a repeat answers
 * the order its first request opened (`idempotent`) and opens nothing.
 */
export async function openFor({
  ctx,
  brandId,
  account,
  group,
  input,
  actor,
  idempotencyKey,
}: UseCase<
  TradingServices,
  OpenInput,
  { brandId: number; account: AccountRecord; group: GroupRecord; actor: string; idempotencyKey?: string }
>) {
  const { comment: _c, whileOpen: _w, whileWanted: _ww, ...asked } = input
  const key = tradeKey(idempotencyKey, 'open', asked)
  let request: OpenRequest
  try {
    request = await checkedOpen(ctx, brandId, account, group, input, actor, key)
  } catch (e) {
    // a repeat answers what its first request did, even when its checks fail now; a repeat whose checks
    // pass is answered by the commit, which reads the key in its transaction (no read here per open)
    if (key && isRefused(e)) {
      const prior = await priorRequest(ctx.db, account.login, key)
      const [row] = prior ? await ctx.db.select().from(orders).where(eq(orders.ticket, prior.ticket)) : []
      if (row) return replayed({ order: row.ticket, trade: orderView(row, group.currency) })
    }
    throw e
  }
  const { row: order, idempotent } = await ctx.tradeOpens.submit(request)
  const answer = { order: order.ticket, trade: orderView(order, group.currency) }
  return idempotent ? replayed(answer) : answer
}

/** Every check of an open, then what the group commit needs to commit it (its margin, its row). */
async function checkedOpen(
  ctx: TradingServices,
  brandId: number,
  account: AccountRecord,
  group: GroupRecord,
  input: OpenInput,
  actor: string,
  key: OpenRequest['key'],
): Promise<OpenRequest> {
  if (account.enable !== 1) throw openError('account is disabled')
  if (account.enableReadOnly === 1) throw openError(readOnly(account))
  const pending = isPendingCmd(input.cmd)
  if (pending && !(input.open_price && input.open_price > 0))
    throw invalid('open_price: required for pending orders (cmd 2-5)')
  const { gs, quote } = await tradableSymbol(ctx, group, input.symbol, openError)
  const info = gs.info
  const direction = directionClosed(info, input.cmd)
  if (direction) throw openError(direction)
  const vol = checkVolume(input.volume, gs.sec, info.maxVolume)
  if (!vol.ok) throw openError(vol.message)
  const now = ctx.clock.now()
  const digits = info.digits
  const price = pending
    ? Math.round(input.open_price! * 10 ** digits) / 10 ** digits
    : isBuy(input.cmd)
      ? quote.ask
      : quote.bid
  if (pending) {
    // a price below one point rounds to 0: an order at 0 is no order (a SELL_STOP there never fills)
    if (price <= 0) throw invalid(`open_price: at least one point of ${input.symbol} (${10 ** -digits})`)
    const p = checkPendingPrice(input.cmd, price, quote.bid, quote.ask, info.stopsLevel, digits)
    if (!p.ok) throw openError(p.message)
    if (input.expiration && input.expiration * 1000 <= now)
      throw openError('expiration: must be in the future')
  }
  const expiry = pendingExpiration(pending ? info.gtcPendings : 1, pending ? (input.expiration ?? 0) : 0, now)
  if (!expiry.ok) throw openError(expiry.message)
  const reference = pending ? price : isBuy(input.cmd) ? quote.bid : quote.ask
  const levels = levelsAt(input.sl, input.tp, digits)
  if (!levels.ok) throw openError(levels.message)
  const { sl, tp } = levels
  const stops = checkStops(input.cmd, sl, tp, reference, info.stopsLevel, digits)
  if (!stops.ok) throw openError(stops.message)
  // money in the account's currency: at no cross rate whose feed has stopped (503 PRICE_STALE)
  const { lookup, noRate } = await fillRates(ctx)
  const comm = commissionOf(info, gs.sec, input.volume, price, group.currency, lookup)
  if (comm === null)
    throw noRate(() => openError(`no conversion rate from ${info.quoteCurrency} to ${group.currency}`))
  let margin: number | null = null
  if (!pending) {
    margin = marginInAccount(
      info,
      input.volume,
      price,
      account.leverage,
      group.currency,
      lookup,
      gs.marginDivider,
    )
    if (margin === null) throw noRate(() => openError(`no conversion rate for the margin of ${input.symbol}`))
  }
  return {
    group,
    margin,
    key,
    whileOpen: input.whileOpen,
    whileWanted: input.whileWanted,
    values: {
      brandId,
      actor,
      login: account.login,
      symbol: input.symbol,
      cmd: input.cmd,
      volume: input.volume,
      state: pending ? 'pending' : 'open',
      openPrice: price,
      openTime: now,
      sl,
      tp,
      expiration: expiry.expiration,
      comment: input.comment ?? '',
      commission: roundToMinor(comm, group.currency),
      rolloverDay: dayOf(now),
      updatedAt: now,
      origin: ctx.origin,
    },
  }
}
