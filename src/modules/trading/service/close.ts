import { and, eq } from 'drizzle-orm'
import { isRefused } from '../../../kernel/http/errors'
import type { UseCase } from '../../../kernel/use-case'
import type { OrderRow } from '../book/positions'
import type { CloseRequest } from '../commit/close-commit'
import { priorRequest, tradeKey } from '../commit/idempotency'
import { checkVolume } from '../domain/checks'
import { isBuy, profitInAccount, swapCharge } from '../domain/formulas'
import { dayOf, settledThrough } from '../domain/swap'
import { refuse } from '../errors'
import { orders } from '../schema'
import {
  type ActorScope,
  actorName,
  actorOrder,
  fillRates,
  orderContext,
  readOnly,
  refuseManual,
  replayed,
  type TradeKeyValue,
  type TradingServices,
  tradableSymbol,
} from './shared'

/** What a close is checked against once, however many positions of one account and symbol it closes. */
export interface CloseBasis {
  oc: NonNullable<Awaited<ReturnType<typeof orderContext>>>
  /** The symbol as the group trades it and its quote now (tradableSymbol). */
  sym: Awaited<ReturnType<typeof tradableSymbol>>
  rates: Awaited<ReturnType<typeof fillRates>>
}

/**
 * The close check of a position (account, volume, conversion rates) at the group's current quote: the
 * request for the commit of closes, or a refusal (CLOSE_REFUSED, PRICE_STALE). Reads nothing itself.
 */
export function closeRequest(
  ctx: TradingServices,
  o: OrderRow,
  { oc, sym: { gs, quote, pricedAt }, rates }: CloseBasis,
  { volume, comment }: { volume?: number; comment?: string },
  reason: 'client' | 'group_close',
  request?: { key: TradeKeyValue; actor: string },
): CloseRequest {
  const fail = (m: string) => refuse('closeRefused', m)
  if (oc.account.enable !== 1 || oc.account.enableReadOnly === 1)
    throw fail(oc.account.enable !== 1 ? 'account is disabled' : readOnly(oc.account))
  const v = volume ?? o.volume
  if (v > o.volume) throw fail(`volume: ${v} is more than the position's ${o.volume}`)
  if (v < o.volume) {
    const step = checkVolume(v, { ...gs.sec, lotMax: o.volume })
    if (!step.ok) throw fail(step.message)
    const rest = o.volume - v
    if (rest < gs.sec.lotMin)
      throw fail(`volume: the remaining ${rest} would be below lot_min ${gs.sec.lotMin}`)
    // what stays open must be a volume the group would open: on its lot grid too
    if (gs.sec.lotStep > 0 && (rest - gs.sec.lotMin) % gs.sec.lotStep !== 0)
      throw fail(
        `volume: the remaining ${rest} would not be lot_min ${gs.sec.lotMin} plus a multiple of lot_step ${gs.sec.lotStep}`,
      )
  }
  const price = isBuy(o.cmd) ? quote.bid : quote.ask
  // the result in the account's currency: at no cross rate whose feed has stopped (503 PRICE_STALE)
  if (profitInAccount(gs.info, o.cmd, v, o.openPrice, price, oc.group.currency, rates.lookup) === null)
    throw rates.noRate(() => fail(`no conversion rate for ${o.symbol} into ${oc.group.currency}`))
  // the swap still owed (no rollover charged it yet) converts from its own currency: a pair passed over
  // as stale would leave it out of the close unsaid (swapDue skips a charge it cannot convert)
  const owesSwap = gs.info.swapEnable === 1 && settledThrough(o) < dayOf(ctx.clock.now())
  const swapRate = owesSwap && swapCharge(gs.info, o.cmd, v, price, 1, oc.group.currency, rates.lookup)
  // (no chain of quoted pairs at all: the swap is left out, as the rollover leaves it)
  if (swapRate === null && rates.stale())
    throw rates.noRate(() => fail(`no conversion rate for the swap of ${o.symbol}`))
  return {
    input: {
      origin: ctx.origin,
      order: o,
      spec: gs.info,
      currency: oc.group.currency,
      volume: v,
      price,
      reason,
      comment,
      lookup: rates.lookup,
    },
    pricedAt,
    key: request?.key,
    actor: request?.actor ?? 'client',
    noRate: rates.noRate,
  }
}

/**
 * Closes a position (all or `volume`) at the group's current quote, through the group commit of closes
 * (commit/close-commit.ts). Used by the close route and the write port; with a key, recorded in the closing
 * transaction. Null when the key had closed it before (a repeat: nothing done).
 */
export async function closePosition({
  ctx,
  brandId,
  position: o,
  input,
  reason,
  request,
}: UseCase<
  TradingServices,
  { volume?: number; comment?: string },
  {
    brandId: number
    position: OrderRow
    reason: 'client' | 'group_close'
    request?: { key: TradeKeyValue; actor: string }
  }
>) {
  const fail = (m: string) => refuse('closeRefused', m)
  const oc = await orderContext(ctx, brandId, o)
  if (!oc) throw refuse('positionNotFound', `order ${o.ticket} not found`)
  if (oc.account.enable !== 1 || oc.account.enableReadOnly === 1)
    throw fail(oc.account.enable !== 1 ? 'account is disabled' : readOnly(oc.account))
  const sym = await tradableSymbol(ctx, oc.group, o.symbol, fail)
  const rates = await fillRates(ctx)
  const done = await ctx.tradeCloses.submit(closeRequest(ctx, o, { oc, sym, rates }, input, reason, request))
  if (done.kind === 'replay') return null
  if (done.kind === 'moved') {
    // lost to another close, its SL or TP, a stop-out: a position no longer open answers as a close of a
    // closed one does (404); one still open (e.g. partly closed meanwhile) may be retried
    const [current] = await ctx.db
      .select({ state: orders.state })
      .from(orders)
      .where(and(eq(orders.ticket, o.ticket), eq(orders.brandId, brandId)))
    if (current?.state !== 'open') throw refuse('positionNotFound', `no open position ${o.ticket}`)
    throw fail(`order ${o.ticket} changed meanwhile; retry`)
  }
  return done.result.closed
}

/** DELETE /trade/close: closes a position, all of it or `volume`; a repeated key answers the first close. */
export async function closeOrder({
  ctx,
  brandId,
  actor,
  input,
  idempotencyKey,
}: UseCase<TradingServices, { order: number; volume?: number; comment?: string }, ActorScope>) {
  const found = await actorOrder(ctx, brandId, actor, input.order)
  if (found.kind !== 'ok') throw refuse('positionNotFound', `no open position ${input.order}`)
  const { comment: _c, ...asked } = input
  const key = tradeKey(idempotencyKey, 'close', asked)
  // a repeat answers what the first close did, though the position is closed now or its checks fail;
  // a repeat of an open position is answered by the commit, which reads the key in its transaction
  const repeat = async () =>
    (await priorRequest(ctx.db, found.order.login, key)) ? replayed({ data: 'OK' as const }) : null
  if (found.order.state !== 'open') {
    const r = await repeat()
    if (r) return r
    throw refuse('positionNotFound', `no open position ${input.order}`)
  }
  try {
    await refuseManual(ctx, actor, found.order.login, 'close', found.order.ticket)
    const closed = await closePosition({
      ctx,
      brandId,
      position: found.order,
      input,
      reason: 'client',
      request: key ? { key, actor: actorName(actor) } : undefined,
    })
    return closed === null ? replayed({ data: 'OK' as const }) : { data: 'OK' as const }
  } catch (e) {
    const r = key && isRefused(e) ? await repeat() : null
    if (r) return r
    throw e
  }
}
