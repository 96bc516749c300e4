import { and, eq } from 'drizzle-orm'
import type { Session } from '../../../kernel/auth/session'
import type { Brand } from '../../../kernel/brand/registry'
import type { Committer } from '../../../kernel/db/group-commit'
import { readOrNothing } from '../../../kernel/db/tolerant'
import type { GroupRecord } from '../../accounts'
import { type GroupSymbol, type Quote, quoteAgeOver } from '../../market'
import type { OrderRow } from '../book/positions'
import type { CloseCommitter } from '../commit/close-commit'
import type { tradeKey } from '../commit/idempotency'
import type { Opened, OpenRequest, WhileWanted } from '../commit/open-commit'
import type { TradingCtx } from '../context'
import { symbolClosed } from '../domain/checks'
import type { TriggerEngine } from '../engine/trigger-engine'
import { refuse } from '../errors'
import { type ManualAction, ManualTradeGuardPort } from '../guard'
import { orders } from '../schema'

/** What the trading services share: the context, the account and symbol checks, who acts. */
/** The trading services: the module's context plus its engine and the committer of opens. */
export interface TradingServices extends TradingCtx {
  triggers: TriggerEngine
  tradeOpens: Committer<OpenRequest, Opened>
  tradeCloses: CloseCommitter
}

export const refresh = (ctx: TradingServices) => ({
  positions: ctx.positions,
  accountsRead: ctx.accountsRead,
  track: (o: OrderRow) => ctx.triggers.changed([{ order: o }]),
})

/** The account a trade request names, scoped to the session; a login it may not see is 403 USER_NOT_FOUND. */
export const tradingAccount = (ctx: TradingCtx, brand: Brand, session: Session, login: number) =>
  ctx.accounts.loadAccountViewAs(brand, session, login, () =>
    refuse('accountNotFound', 'login not found for this session'),
  )

/** Why an account may not trade: its reason when a module made it read-only (a breached challenge). */
export const readOnly = (a: { readOnlyReason: string }) =>
  a.readOnlyReason ? `account is read-only: ${a.readOnlyReason}` : 'account is read-only'

/**
 * No trade at a price this instance knows may be stale (its bus reader is cut off from Redis): 503
 * PRICE_STALE, nothing written, the client retries (docs/adr/0014).
 */
export function refuseStalePrices(ctx: TradingServices) {
  const stale = ctx.market.staleness()
  if (stale) throw refuse('priceStale', `${stale}; no order is filled at an old price, retry later`)
}

/**
 * The cross rates of a fill (market.tradeLookup: a pair whose feed stopped is no rate), and what a
 * conversion that found none answers: 503 PRICE_STALE naming that pair, nothing filled, else `none` (no
 * chain of quoted pairs at all). Money is never converted at an old price, as it is never filled at one.
 */
export async function fillRates(ctx: TradingServices) {
  const rates = await ctx.market.tradeLookup()
  const noRate = (none: () => Error) => {
    const [leg] = rates.staleLegs()
    if (!leg) return none()
    return refuse(
      'priceStale',
      `the last price of ${leg.symbol}, a cross rate of this trade, is ${leg.age} s old (its limit is ${leg.limit} s): its feed has stopped; nothing is filled, retry`,
    )
  }
  /** Whether a pair was passed over as stale (a conversion that found no rate may have found one then). */
  const stale = () => rates.staleLegs().length > 0
  return { lookup: rates.lookup, noRate, stale }
}

/**
 * 503 PRICE_STALE when the symbol's last quote is older than its max_quote_age: its feed has stopped, and
 * nothing is filled or checked at that price. Asked while its market is open (a closed market's last price
 * is its close, however old).
 */
export function refuseOldQuote(ctx: TradingServices, gs: GroupSymbol, quote: Quote) {
  // from when this instance (at the edge, the engine) took the symbol's last tick off the bus: the feed's
  // own time may lag or lead
  const age = quoteAgeOver(
    gs.info.maxQuoteAge,
    ctx.market.quotes.seenAt(gs.info.symbol, quote),
    ctx.clock.now(),
  )
  if (age !== null)
    throw refuse(
      'priceStale',
      `the last price of ${gs.info.symbol} is ${age} s old (its limit is ${gs.info.maxQuoteAge} s): its feed has stopped; nothing is filled, retry`,
    )
}

/** Symbol, session, permissions and price checks shared by opening and closing. */
export async function tradableSymbol(
  ctx: TradingServices,
  group: GroupRecord,
  symbol: string,
  fail: (m: string) => Error,
) {
  const gs = await ctx.refdata.forGroup(group.id, symbol)
  if (!gs) throw fail(`symbol ${symbol} is not available for group ${group.name}`)
  const closed = symbolClosed(gs, group.name, ctx.clock.now())
  if (closed) throw fail(closed)
  // the price first: reading it at the edge reads the engine's word too, which staleness weighs
  const quote = await ctx.market.groupPrice(gs)
  refuseStalePrices(ctx)
  // no quote yet on this instance (just restarted, its feed not caught up): nothing filled, retry
  if (!quote) throw refuse('priceStale', `no price for ${symbol} on this instance yet; retry`)
  refuseOldQuote(ctx, gs, quote)
  // when the price was read: a close's commit refuses it once this is too old (commit/fill-age.ts)
  return { gs, quote, pricedAt: ctx.clock.now() }
}

export interface OpenInput {
  login: number
  cmd: number
  volume: number
  symbol: string
  sl: number
  tp: number
  open_price?: number
  expiration?: number
  comment?: string
  /**
   * Write port only: open only while this order is still open or pending, checked in the commit's
   * transaction (a copy is never opened after its master position closed: 409 PARENT_CLOSED).
   */
  whileOpen?: number
  /**
   * Write port only: open only while the caller still wants it, asked in the commit's transaction, once
   * per batch for every request sharing `wanted` (a copy is never opened after its subscription was
   * paused or ended: 409 NO_LONGER_WANTED). `wanted` answers which of the ids still are.
   */
  whileWanted?: WhileWanted
}

/**
 * Who acts on an order: a session (the routes), or a module through trading's write port with no
 * session (the copier, prop, staff tools), named in the order (`orders.actor`) and its key's record.
 */
export type Actor = { session: Session } | { system: string }

/** Who asks for an order action: the brand, the actor and the request's idempotency key, if it sent one. */
export interface ActorScope {
  brandId: number
  actor: Actor
  idempotencyKey?: string
}

/** Who asks through a route: the brand and the session (the login is checked against it). */
export interface SessionScope {
  brand: Brand
  session: Session
}

export const actorName = (a: Actor) =>
  'system' in a ? a.system : a.session.type === 'SESSION_USER' ? 'client' : `staff:${a.session.staffId}`

/**
 * A client's own action on an account another module manages (copy trading's manual_trading_mode):
 * staff and modules acting through the write port are not asked.
 */
export async function refuseManual(
  ctx: TradingServices,
  actor: Actor,
  login: number,
  action: ManualAction,
  ticket?: number,
) {
  if (!('session' in actor) || actor.session.type !== 'SESSION_USER' || !ctx.ports.has(ManualTradeGuardPort))
    return
  const why = await ctx.ports.get(ManualTradeGuardPort)(login, action, ticket)
  if (why) throw refuse('manualTradingDisabled', why)
}

/**
 * An order of the brand that the actor may touch: `hidden` for another brand (or none), `foreign` for a
 * user session's other logins. A system actor (the write port) acts on any order of the brand.
 */
export async function actorOrder(ctx: TradingServices, brandId: number, actor: Actor, ticket: number) {
  const [o] = await readOrNothing(ctx.logger, `order ${ticket}`, () =>
    ctx.db
      .select()
      .from(orders)
      .where(and(eq(orders.ticket, ticket), eq(orders.brandId, brandId))),
  )
  if (!o) return { kind: 'hidden' as const }
  if ('session' in actor && actor.session.type === 'SESSION_USER' && o.login !== actor.session.login)
    return { kind: 'foreign' as const }
  return { kind: 'ok' as const, order: o }
}

export async function orderContext(ctx: TradingServices, brandId: number, o: OrderRow) {
  const account = await ctx.accountsRead.accountIn(brandId, o.login)
  const group = account && (await ctx.accountsRead.group(account.groupId))
  if (!account || !group) return null
  return { account, group }
}

/** The answer of a repeated request: the same shape, `idempotent`, nothing done again. */
export const replayed = <T extends object>(body: T) => ({ ...body, idempotent: true as const })

export type TradeKeyValue = NonNullable<ReturnType<typeof tradeKey>>
