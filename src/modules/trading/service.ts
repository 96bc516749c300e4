import { and, desc, eq, gte, lt, sql } from 'drizzle-orm'
import type { Session } from '../../kernel/auth/session'
import type { Brand } from '../../kernel/brand/registry'
import type { Committer } from '../../kernel/db/group-commit'
import { type KeysetPosition, olderThan } from '../../kernel/db/keyset'
import { readOrNothing, readSkippingBadRows } from '../../kernel/db/tolerant'
import { ApiError, invalid } from '../../kernel/http/errors'
import { type AccountRecord, type GroupRecord, roundToCurrency, roundToMinor } from '../accounts'
import { isTradingOpen } from '../market'
import type { Closed, CloseRequest } from './close-commit'
import type { TradingCtx } from './context'
import { checkPendingPrice, checkStops, checkVolume, isPendingCmd } from './domain/checks'
import { commission as commissionOf, isBuy, marginInAccount } from './domain/formulas'
import type { TriggerEngine } from './engine'
import { TradeCancelled, TradeModified } from './events'
import { refreshAfterCommit } from './execution'
import { pricePositions } from './exposure'
import { type ManualAction, ManualTradeGuardPort } from './guard'
import { priorRequest, recordRequest, tradeKey } from './idempotency'
import { type Opened, type OpenRequest, openError } from './open-commit'
import type { OrderRow } from './positions'
import { orders } from './schema'
import { orderView, tradeEvent } from './views'

/** The trading services: the module's context plus its engine and the committer of opens. */
export interface TradingServices extends TradingCtx {
  triggers: TriggerEngine
  tradeOpens: Committer<OpenRequest, Opened>
  tradeCloses: Committer<CloseRequest, Closed>
}

const refresh = (ctx: TradingServices) => ({
  positions: ctx.positions,
  accountsRead: ctx.accountsRead,
  track: (o: OrderRow) => ctx.triggers.changed([{ order: o }]),
})

/** The account a trade request names, scoped to the session; a login it may not see is 403 USER_NOT_FOUND. */
const tradingAccount = (ctx: TradingCtx, brand: Brand, session: Session, login: number) =>
  ctx.accounts.loadAccountViewAs(
    brand,
    session,
    login,
    () => new ApiError(403, 'USER_NOT_FOUND', 'login not found for this session'),
  )

/** Why an account may not trade: its reason when a module made it read-only (a breached challenge). */
const readOnly = (a: { readOnlyReason: string }) =>
  a.readOnlyReason ? `account is read-only: ${a.readOnlyReason}` : 'account is read-only'

/**
 * No trade at a price this instance knows may be stale (its bus reader is cut off from Redis): 503
 * PRICE_STALE, nothing written, the client retries (docs/adr/0014).
 */
function refuseStalePrices(ctx: TradingServices) {
  const stale = ctx.market.staleness()
  if (stale)
    throw new ApiError(503, 'PRICE_STALE', `${stale}; no order is filled at an old price, retry later`)
}

/** Symbol, session, permissions and price checks shared by opening and closing. */
async function tradableSymbol(
  ctx: TradingServices,
  group: GroupRecord,
  symbol: string,
  fail: (m: string) => ApiError,
) {
  const gs = await ctx.refdata.forGroup(group.id, symbol)
  if (gs?.sec.show !== 1) throw fail(`symbol ${symbol} is not available for group ${group.name}`)
  if (gs.info.trade === 0 || gs.sec.trade !== 1)
    throw fail(`symbol ${symbol} is not tradable for group ${group.name}`)
  if (!isTradingOpen(gs.info.sessionList, ctx.clock.now()))
    throw fail(`market closed: ${symbol} is outside its trading session`)
  refuseStalePrices(ctx)
  const quote = await ctx.market.groupPrice(gs)
  // no quote yet on this instance (just restarted, its feed not caught up): nothing filled, retry
  if (!quote) throw new ApiError(503, 'PRICE_STALE', `no price for ${symbol} on this instance yet; retry`)
  return { gs, quote }
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
}

/**
 * Who acts on an order: a session (the routes), or a module through trading's write port with no
 * session (the copier, prop, staff tools), named in the order (`orders.actor`) and its key's record.
 */
export type Actor = { session: Session } | { system: string }

export const actorName = (a: Actor) =>
  'system' in a ? a.system : a.session.type === 'SESSION_USER' ? 'client' : `staff:${a.session.staffId}`

/**
 * A client's own action on an account another module manages (copy trading's manual_trading_mode):
 * staff and modules acting through the write port are not asked.
 */
async function refuseManual(
  ctx: TradingServices,
  actor: Actor,
  login: number,
  action: ManualAction,
  ticket?: number,
) {
  if (!('session' in actor) || actor.session.type !== 'SESSION_USER' || !ctx.ports.has(ManualTradeGuardPort))
    return
  const why = await ctx.ports.get(ManualTradeGuardPort)(login, action, ticket)
  if (why) throw new ApiError(403, 'MANUAL_TRADING_DISABLED', why)
}

/** POST /trade/open: the session's account, then the shared core. */
export async function openOrder(
  ctx: TradingServices,
  brand: Brand,
  session: Session,
  input: OpenInput,
  idempotencyKey?: string,
) {
  const { account, group } = await tradingAccount(ctx, brand, session, input.login)
  await refuseManual(ctx, { session }, account.login, 'open')
  return openFor(ctx, brand.id, account, group, input, actorName({ session }), idempotencyKey)
}

/**
 * Opens a position or places a pending order on an account already resolved (by the session's scope or
 * the write port's brand): every check of a trade, then the group commit. With a key, a repeat answers
 * the order its first request opened (`idempotent`) and opens nothing.
 */
export async function openFor(
  ctx: TradingServices,
  brandId: number,
  account: AccountRecord,
  group: GroupRecord,
  input: OpenInput,
  actor: string,
  idempotencyKey?: string,
) {
  const { comment: _c, whileOpen: _w, ...asked } = input
  const key = tradeKey(idempotencyKey, 'open', asked)
  let request: OpenRequest
  try {
    request = await checkedOpen(ctx, brandId, account, group, input, actor, key)
  } catch (e) {
    // a repeat answers what its first request did, even when its checks fail now; a repeat whose checks
    // pass is answered by the commit, which reads the key in its transaction (no read here per open)
    if (key && e instanceof ApiError) {
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
  if (info.trade === 1) throw openError(`symbol ${input.symbol} is close-only`)
  if (info.longOnly === 1 && !isBuy(input.cmd))
    throw openError(`symbol ${input.symbol} is long only: sell orders are refused`)
  const vol = checkVolume(input.volume, gs.sec)
  if (!vol.ok) throw openError(vol.message)
  const now = ctx.clock.now()
  const digits = info.digits
  const price = pending
    ? Math.round(input.open_price! * 10 ** digits) / 10 ** digits
    : isBuy(input.cmd)
      ? quote.ask
      : quote.bid
  if (pending) {
    const p = checkPendingPrice(input.cmd, price, quote.bid, quote.ask, info.stopsLevel, digits)
    if (!p.ok) throw openError(p.message)
    if (input.expiration && input.expiration * 1000 <= now)
      throw openError('expiration: must be in the future')
  }
  const reference = pending ? price : isBuy(input.cmd) ? quote.bid : quote.ask
  const stops = checkStops(input.cmd, input.sl, input.tp, reference, info.stopsLevel, digits)
  if (!stops.ok) throw openError(stops.message)
  const lookup = await ctx.market.quoteLookup()
  const comm = commissionOf(info, gs.sec, input.volume, price, group.currency, lookup)
  if (comm === null) throw openError(`no conversion rate from ${info.quoteCurrency} to ${group.currency}`)
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
    if (margin === null) throw openError(`no conversion rate for the margin of ${input.symbol}`)
  }
  return {
    group,
    margin,
    key,
    whileOpen: input.whileOpen,
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
      sl: input.sl,
      tp: input.tp,
      expiration: pending ? (input.expiration ?? 0) : 0,
      comment: input.comment ?? '',
      commission: roundToMinor(comm, group.currency),
      rolloverDay: Math.floor(now / 86_400_000),
      updatedAt: now,
      origin: ctx.origin,
    },
  }
}

/**
 * An order of the brand that the actor may touch: `hidden` for another brand (or none), `foreign` for a
 * user session's other logins. A system actor (the write port) acts on any order of the brand.
 */
async function actorOrder(ctx: TradingServices, brandId: number, actor: Actor, ticket: number) {
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

async function orderContext(ctx: TradingServices, brandId: number, o: OrderRow) {
  const account = await ctx.accountsRead.account(o.login)
  const group = account && (await ctx.accountsRead.group(account.groupId))
  if (!account || !group || group.brandId !== brandId) return null
  return { account, group }
}

/** The answer of a repeated request: the same shape, `idempotent`, nothing done again. */
const replayed = <T extends object>(body: T) => ({ ...body, idempotent: true as const })

export async function modifyOrder(
  ctx: TradingServices,
  brandId: number,
  actor: Actor,
  input: { order: number; sl: number; tp: number },
  idempotencyKey?: string,
) {
  const found = await actorOrder(ctx, brandId, actor, input.order)
  if (found.kind === 'hidden') throw new ApiError(404, 'MODIFY_TRADE_ERROR', `order ${input.order} not found`)
  if (found.kind === 'foreign')
    throw new ApiError(403, 'MODIFY_TRADE_ERROR', `order ${input.order} belongs to another user`)
  const o = found.order
  const key = tradeKey(idempotencyKey, 'modify', input)
  const oc = await orderContext(ctx, brandId, o)
  if (!oc) throw new ApiError(404, 'MODIFY_TRADE_ERROR', `order ${input.order} not found`)
  if (await priorRequest(ctx.db, o.login, key))
    return replayed({ data: 'OK' as const, trade: orderView(o, oc.group.currency) })
  await refuseManual(ctx, actor, o.login, 'modify', o.ticket)
  if (o.state !== 'open' && o.state !== 'pending')
    throw new ApiError(404, 'MODIFY_TRADE_ERROR', `order ${input.order} is not active`)
  const gs = await ctx.refdata.forGroup(oc.group.id, o.symbol)
  const quote = gs && (await ctx.market.groupPrice(gs))
  if (!gs || !quote) throw new ApiError(500, 'INCORRECT_SL_TP', `no price for ${o.symbol}`)
  const reference = o.state === 'pending' ? o.openPrice : isBuy(o.cmd) ? quote.bid : quote.ask
  const check = checkStops(o.cmd, input.sl, input.tp, reference, gs.info.stopsLevel, gs.info.digits)
  if (!check.ok) throw new ApiError(500, 'INCORRECT_SL_TP', check.message)
  const now = ctx.clock.now()
  const done = await ctx.uow.run(async (tx, work) => {
    if (await priorRequest(tx, o.login, key)) return { replay: true as const }
    const [r] = await tx
      .update(orders)
      .set({ sl: input.sl, tp: input.tp, updatedAt: now, origin: ctx.origin })
      .where(and(eq(orders.ticket, o.ticket), eq(orders.state, o.state), eq(orders.volume, o.volume)))
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
  if (!done.row)
    throw new ApiError(404, 'MODIFY_TRADE_ERROR', `order ${input.order} changed meanwhile; retry`)
  return { data: 'OK' as const, trade: orderView(done.row, oc.group.currency) }
}

/**
 * Closes a position (all or `volume`) at the group's current quote, through the group commit of closes
 * (close-commit.ts). Used by the close and group-close routes and the write port; with a key, recorded in
 * the closing transaction. Null when the key had closed it before (a repeat: nothing done).
 */
async function closePosition(
  ctx: TradingServices,
  brandId: number,
  o: OrderRow,
  volume: number | undefined,
  reason: 'client' | 'group_close',
  comment?: string,
  request?: { key: TradeKeyValue; actor: string },
) {
  const fail = (m: string) => new ApiError(500, 'TRADE_ERROR', m)
  const oc = await orderContext(ctx, brandId, o)
  if (!oc) throw new ApiError(404, 'TRADE_ERROR', `order ${o.ticket} not found`)
  if (oc.account.enable !== 1 || oc.account.enableReadOnly === 1)
    throw fail(oc.account.enable !== 1 ? 'account is disabled' : readOnly(oc.account))
  const { gs, quote } = await tradableSymbol(ctx, oc.group, o.symbol, fail)
  const v = volume ?? o.volume
  if (v > o.volume) throw fail(`volume: ${v} is more than the position's ${o.volume}`)
  if (v < o.volume) {
    const step = checkVolume(v, { ...gs.sec, lotMax: o.volume })
    if (!step.ok) throw fail(step.message)
    if (o.volume - v < gs.sec.lotMin)
      throw fail(`volume: the remaining ${o.volume - v} would be below lot_min ${gs.sec.lotMin}`)
  }
  const done = await ctx.tradeCloses.submit({
    input: {
      origin: ctx.origin,
      order: o,
      spec: gs.info,
      currency: oc.group.currency,
      volume: v,
      price: isBuy(o.cmd) ? quote.bid : quote.ask,
      reason,
      comment,
      lookup: await ctx.market.quoteLookup(),
    },
    key: request?.key,
    actor: request?.actor ?? 'client',
  })
  if (done.kind === 'replay') return null
  if (done.kind === 'moved') throw fail(`order ${o.ticket} changed meanwhile; retry`)
  return done.result.closed
}

type TradeKeyValue = NonNullable<ReturnType<typeof tradeKey>>

export async function closeOrder(
  ctx: TradingServices,
  brandId: number,
  actor: Actor,
  input: { order: number; volume?: number; comment?: string },
  idempotencyKey?: string,
) {
  const found = await actorOrder(ctx, brandId, actor, input.order)
  if (found.kind !== 'ok') throw new ApiError(404, 'TRADE_ERROR', `no open position ${input.order}`)
  const { comment: _c, ...asked } = input
  const key = tradeKey(idempotencyKey, 'close', asked)
  // a repeat answers what the first close did, though the position is closed now or its checks fail;
  // a repeat of an open position is answered by the commit, which reads the key in its transaction
  const repeat = async () =>
    (await priorRequest(ctx.db, found.order.login, key)) ? replayed({ data: 'OK' as const }) : null
  if (found.order.state !== 'open') {
    const r = await repeat()
    if (r) return r
    throw new ApiError(404, 'TRADE_ERROR', `no open position ${input.order}`)
  }
  try {
    await refuseManual(ctx, actor, found.order.login, 'close', found.order.ticket)
    const closed = await closePosition(
      ctx,
      brandId,
      found.order,
      input.volume,
      'client',
      input.comment,
      key ? { key, actor: actorName(actor) } : undefined,
    )
    return closed === null ? replayed({ data: 'OK' as const }) : { data: 'OK' as const }
  } catch (e) {
    const r = key && e instanceof ApiError ? await repeat() : null
    if (r) return r
    throw e
  }
}

export async function closeGroup(
  ctx: TradingServices,
  brand: Brand,
  session: Session,
  input: { login: number; type: number; symbol?: string; comment?: string },
) {
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
  // submitted together: the group commit of closes takes them in one transaction
  const outcomes = await Promise.allSettled(
    priced
      .filter((p) => (input.type === 1 ? p.profit > 0 : input.type === -1 ? p.profit < 0 : true))
      .map(async (p) => {
        try {
          return await closePosition(
            ctx,
            brand.id,
            p.order,
            undefined,
            'group_close',
            input.comment !== undefined ? 'GROUP_CLOSE' : undefined,
          )
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

export async function cancelOrder(
  ctx: TradingServices,
  brandId: number,
  actor: Actor,
  input: { order: number },
  idempotencyKey?: string,
) {
  const fail = (m: string) => new ApiError(401, 'CANCEL_PENDING_TRADE_ERROR', m)
  const found = await actorOrder(ctx, brandId, actor, input.order)
  if (found.kind !== 'ok') throw fail(`order ${input.order} not found`)
  const key = tradeKey(idempotencyKey, 'cancel', input)
  if (await priorRequest(ctx.db, found.order.login, key)) return replayed({ data: 'ok' as const })
  if (found.order.state !== 'pending')
    throw fail(`order ${input.order} is not a pending order (state ${found.order.state})`)
  await refuseManual(ctx, actor, found.order.login, 'cancel', found.order.ticket)
  const oc = await orderContext(ctx, brandId, found.order)
  if (!oc) throw fail(`order ${input.order} not found`)
  const now = ctx.clock.now()
  const done = await ctx.uow.run(async (tx, work) => {
    if (await priorRequest(tx, found.order.login, key)) return { replay: true as const }
    const [r] = await tx
      .update(orders)
      .set({ state: 'cancelled', closeTime: now, closeReason: 'client', updatedAt: now, origin: ctx.origin })
      .where(and(eq(orders.ticket, input.order), eq(orders.state, 'pending')))
      .returning()
    if (r) {
      await recordRequest(tx, {
        login: r.login,
        key,
        kind: 'cancel',
        ticket: r.ticket,
        actor: actorName(actor),
        now,
      })
      work.emit(TradeCancelled, brandId, { ...tradeEvent(r, oc.group.currency), reason: 'client' })
      refreshAfterCommit(work, refresh(ctx), r)
    }
    return { row: r }
  })
  if ('replay' in done) return replayed({ data: 'ok' as const })
  if (!done.row) throw fail(`order ${input.order} was filled or cancelled meanwhile`)
  return { data: 'ok' as const }
}

export async function listActive(ctx: TradingServices, brand: Brand, session: Session, login: number) {
  const { account, group } = await tradingAccount(ctx, brand, session, login)
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

/**
 * Closed, cancelled and expired orders of a login, newest first, in [from, to) (epoch seconds), paged by
 * an opaque cursor (the close time and ticket of the last row served).
 */
export async function history(
  ctx: TradingServices,
  brand: Brand,
  session: Session,
  q: { login: number; from?: number; to?: number; limit?: number; cursor?: string },
) {
  const { account, group } = await tradingAccount(ctx, brand, session, q.login)
  const limit = q.limit ?? 100
  let after: KeysetPosition | undefined
  if (q.cursor) {
    const m = /^(\d+)\.(\d+)$/.exec(q.cursor)
    if (!m) throw invalid('cursor: not a cursor returned by this route')
    after = { time: Number(m[1]), id: Number(m[2]) }
  }
  const where = and(
    eq(orders.login, account.login),
    eq(orders.brandId, brand.id),
    // Literal, so SQLite can use the partial history index.
    sql`${orders.state} in ('closed', 'cancelled', 'expired')`,
    q.from !== undefined ? gte(orders.closeTime, q.from * 1000) : undefined,
    q.to !== undefined ? lt(orders.closeTime, q.to * 1000) : undefined,
    olderThan(orders.closeTime, orders.ticket, after),
  )
  const order = [desc(orders.closeTime), desc(orders.ticket)]
  const rows = await readSkippingBadRows(ctx.logger, `history of ${account.login}`, {
    all: () =>
      ctx.db
        .select()
        .from(orders)
        .where(where)
        .orderBy(...order)
        .limit(limit + 1),
    keys: async () =>
      (
        await ctx.db
          .select({ t: orders.ticket })
          .from(orders)
          .where(where)
          .orderBy(...order)
          .limit(limit + 1)
      ).map((r) => r.t),
    one: (ticket) => ctx.db.select().from(orders).where(eq(orders.ticket, ticket)),
  })
  const page = rows.slice(0, limit)
  const last = page[page.length - 1]
  return {
    rows: page.map((o) => orderView(o, group.currency)),
    next_cursor: rows.length > limit && last ? `${last.closeTime}.${last.ticket}` : null,
  }
}
