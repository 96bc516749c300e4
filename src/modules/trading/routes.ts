import { Elysia, t } from 'elysia'
import type { SessionType } from '../../kernel/auth/session'
import { idempotencyKeyOf } from '../../kernel/http/idempotency'
import { doc, errors } from '../../kernel/http/openapi'
import { EpochSeconds, Id, Int, Login, OneOf, textInput } from '../../kernel/http/schemas'
import { security } from '../../kernel/http/security'
import { MAX_PRICE, MAX_VOLUME } from '../../kernel/limits'
import { mergeResponses } from '../../kernel/refusal'
import { CMD_NAMES } from './domain/checks'
import { CLOSE_REASONS } from './domain/close-reasons'
import { TRADING } from './errors'
import type { TradingServices } from './service'
import { cancelOrder, closeGroup, closeOrder, history, listActive, modifyOrder, openOrder } from './service'

const TRADERS: SessionType[] = ['SESSION_USER', 'SESSION_MANAGER', 'SESSION_ADMIN', 'SESSION_DEALER']
const denied = { status: 401, code: 'PERMISSION_DENIED' }
const price = (description: string) => t.Number({ minimum: 0, maximum: MAX_PRICE, description })
const Ticket = Id('order ticket (from POST /trade/open or GET /trade/list)', 1)
// the refusals each route documents come from trading's table (errors.ts) and the kernel's
const OWN_LOGIN = mergeResponses(TRADING.responses('accountNotFound'), { 404: ['GROUP_NOT_FOUND'] })
/** A client's own trade on an account whose copy subscription's master forbids it (copy trading). */
const OWN_LOGIN_MANUAL = mergeResponses(OWN_LOGIN, TRADING.responses('manualTradingDisabled'))

const Order = t.Object(
  {
    order: Int({ description: 'ticket' }),
    login: Int(),
    symbol: t.String(),
    cmd: Int({ description: '0 BUY, 1 SELL, 2 BUY_LIMIT, 3 SELL_LIMIT, 4 BUY_STOP, 5 SELL_STOP' }),
    type: OneOf(CMD_NAMES, { description: 'name of cmd' }),
    state: OneOf(['pending', 'open', 'closed', 'cancelled', 'expired'], {
      description:
        'pending: an order waiting for its price; open: a position; closed, cancelled, expired: history',
    }),
    volume: Int({ description: 'hundredths of a lot (100 = 1.00 lot)' }),
    open_price: t.Number(),
    open_time: Int({ description: 'epoch seconds' }),
    sl: t.Number(),
    tp: t.Number(),
    expiration: Int({ description: 'epoch seconds, 0 = good till cancelled' }),
    commission: t.Number({
      description:
        'account currency; charged round-turn at open, booked at close. A pending order shows the estimate at its price (recomputed at the fill); one cancelled or expired unfilled carries 0',
    }),
    storage: t.Number({ description: 'accumulated swap, account currency' }),
    profit: t.Number({
      description: 'live floating profit of a position; realized profit of a closed trade',
    }),
    close_price: t.Number({
      description: 'current close price of a position; close price of a closed trade',
    }),
    close_time: Int({ description: 'epoch seconds, 0 while active' }),
    close_reason: OneOf(CLOSE_REASONS, {
      description:
        "'' while active; client, sl, tp, stopout, group_close, risk_limit (copy trading's protection), expiration, no_money, trade_disabled (a pending order reached its price on a disabled or read-only account), invalid (repaired by an upgrade)",
    }),
    comment: t.String(),
    parent: Int({ description: 'for the closed part of a partial close: the ticket it came from' }),
  },
  { title: 'Order' },
)

const OpenBody = t.Object(
  {
    login: Login,
    cmd: Int({
      minimum: 0,
      maximum: 5,
      description: '0 BUY, 1 SELL, 2 BUY_LIMIT, 3 SELL_LIMIT, 4 BUY_STOP, 5 SELL_STOP',
    }),
    volume: Int({
      minimum: 1,
      maximum: MAX_VOLUME,
      description: 'hundredths of a lot (10 = 0.10 lot); within lot_min/lot_max/lot_step of the group',
    }),
    symbol: t.String({ minLength: 1, maxLength: 32, description: 'symbol name, e.g. EURUSD' }),
    sl: price('stop loss price; 0 for none'),
    tp: price('take profit price; 0 for none'),
    open_price: t.Optional(
      t.Number({
        exclusiveMinimum: 0,
        maximum: MAX_PRICE,
        description: 'required for pending orders (cmd 2-5); ignored for market orders',
      }),
    ),
    open_time: t.Optional(EpochSeconds('accepted for compatibility; the server sets the open time')),
    expiration: t.Optional(
      EpochSeconds(
        'pending orders: when the order expires; 0 = good till cancelled (on a symbol with gtc_pendings 0: the end of the UTC day, and no later one is accepted)',
      ),
    ),
    comment: t.Optional(t.String({ maxLength: 64, description: 'free text kept on the order' })),
  },
  // a crypto CFD trades every day of the week, so the example works whenever it is tried
  { example: { login: 100001, cmd: 0, volume: 10, symbol: 'BTCUSD', sl: 0, tp: 0, comment: 'first trade' } },
)

const Idempotent = t.Boolean({
  description: 'present (true) on a repeat of a request with the same Idempotency-Key, which changed nothing',
})

/** A repeated request says so in a header too (Idempotent-Replayed: true), as Stripe does. */
function marked<T extends object>(set: { headers: Record<string, unknown> }, body: T): T {
  if ('idempotent' in body && body.idempotent) set.headers['idempotent-replayed'] = 'true'
  return body
}

export const tradingRoutes = (ctx: TradingServices) =>
  new Elysia({ name: 'trading-routes', seed: ctx.instanceId, prefix: '/trade' })
    .use(security(ctx))
    .post(
      '/open',
      async ({ brand, session, body, request, set }) =>
        marked(
          set,
          await openOrder({ ctx, brand, session, input: body, idempotencyKey: idempotencyKeyOf(request) }),
        ),
      {
        auth: { roles: TRADERS, denied },
        body: OpenBody,
        response: {
          200: t.Object({
            order: Int({ description: 'the new ticket' }),
            trade: Order,
            idempotent: t.Optional(Idempotent),
          }),
          ...errors(mergeResponses(OWN_LOGIN_MANUAL, TRADING.responses('openRefused', 'priceStale'))),
        },
        detail: doc('Trading', 'Open a market position or place a pending order', {
          idempotent: true,
          description:
            "Market orders fill at the live quote of the account group (BUY at ask, SELL at bid). A pending order becomes a position at the quote that reaches its price (BUY at ask, SELL at bid): a limit at its price or better, a stop at its price or worse when the market gaps past it; if that quote is already past its SL or TP (a gap, a wide spread), the position closes on it at once (close_reason sl or tp, at the bid for a BUY, the ask for a SELL); it is cancelled instead without the free margin (close_reason no_money) or on an account that is disabled or read-only by then (trade_disabled). Prices, SL and TP are rounded to the symbol's digits. Refusals answer 500 OPEN_ORDER_ERROR with the reason: market closed, symbol not available or not tradable, account disabled or read-only, long-only symbol, volume outside the group limits, not enough free margin, SL/TP on the wrong side or closer than stops_level, pending price on the wrong side. With an Idempotency-Key, a retry after a lost answer gets the order the first request opened (`idempotent: true`), whatever the market did since. 503 PRICE_STALE: this instance has no current price (its price feed is cut off), or the symbol's last quote is older than its max_quote_age (a feed stopped for it alone), or so is the last quote of a pair that converts its commission or margin into the account's currency while that pair's market is open (out of its session a pair's last price stays the rate), or a market order's price, read when its checks ran, is over 3 s old by the time it can be written (the database was slow to answer); nothing is filled, retry. 503 SERVICE_UNAVAILABLE (Retry-After): the order waited over DATABASE_WRITE_TIMEOUT_MS for the database; nothing is written, retry. 403 USER_NOT_FOUND: the login is not the session's (or not of its brand). A customer session answers 401 PERMISSION_DENIED: trading needs the account sign-in (POST /sign/in) or a staff session.",
        }),
      },
    )
    .put(
      '/modify',
      async ({ brand, session, body, request, set }) =>
        marked(
          set,
          await modifyOrder({
            ctx,
            brandId: brand.id,
            actor: { session },
            input: body,
            idempotencyKey: idempotencyKeyOf(request),
          }),
        ),
      {
        auth: { roles: ['SESSION_USER'], denied },
        body: t.Object(
          {
            order: Ticket,
            sl: price('new stop loss; 0 removes it'),
            tp: price('new take profit; 0 removes it'),
          },
          { example: { order: 1, sl: 0, tp: 0 } },
        ),
        response: {
          200: t.Object({ data: t.Literal('OK'), trade: Order, idempotent: t.Optional(Idempotent) }),
          ...errors(
            TRADING.responses(
              'modifyNotYours',
              'modifyForbidden',
              'manualTradingDisabled',
              'modifyNotFound',
              'stopsRefused',
              'priceStale',
            ),
          ),
        },
        detail: doc('Trading', 'Change SL and TP of a position or pending order', {
          idempotent: true,
          description:
            "Client (account) sessions only. SL and TP are rounded to the symbol's digits. 403 MODIFY_TRADE_ERROR: another user's order, or the account is disabled or read-only; 404 MODIFY_TRADE_ERROR: no such active order; 500 INCORRECT_SL_TP: wrong side or closer than stops_level (a position's levels against the price it would close at, a pending order's against its open price), or a position's symbol is outside its trading session or not tradable for the group, or (rare) the order changed state twice while being modified: retry. A partial close meanwhile does not refuse the change (the levels apply to the volume left). 503 PRICE_STALE: this instance has no current price (its price feed is cut off), or the symbol's last quote is older than its max_quote_age; nothing changed, retry.",
        }),
      },
    )
    .delete(
      '/close',
      async ({ brand, session, body, request, set }) =>
        marked(
          set,
          await closeOrder({
            ctx,
            brandId: brand.id,
            actor: { session },
            input: body,
            idempotencyKey: idempotencyKeyOf(request),
          }),
        ),
      {
        auth: { roles: TRADERS, denied },
        body: t.Object(
          {
            order: Ticket,
            volume: t.Optional(
              Int({
                minimum: 1,
                maximum: MAX_VOLUME,
                description: 'hundredths of a lot to close; absent = the whole position',
              }),
            ),
            comment: t.Optional(
              t.String({ maxLength: 64, description: 'replaces the comment of the closed part' }),
            ),
          },
          { example: { order: 1 } },
        ),
        response: {
          200: t.Object({ data: t.Literal('OK'), idempotent: t.Optional(Idempotent) }),
          ...errors(
            TRADING.responses('manualTradingDisabled', 'positionNotFound', 'closeRefused', 'priceStale'),
          ),
        },
        detail: doc('Trading', 'Close a position, fully or partially, at the current quote', {
          idempotent: true,
          description:
            "The close price is the group quote (BUY closes at bid, SELL at ask). 404 TRADE_ERROR: no such open position; 500 TRADE_ERROR: the close failed (market closed, invalid volume: the part closed and the part left open must each be lot_min plus a multiple of lot_step), or the position changed meanwhile and is still open (retry); a position closed meanwhile (another close, its SL or TP) answers 404; 503 PRICE_STALE: no current price on this instance, or the last quote of the symbol is older than its max_quote_age, or so is the last quote of a pair that converts the result into the account currency while the market of that pair is open, or the close's price, read when its checks ran, is over 3 s old by the time it can be written (the database was slow to answer); nothing closed, retry. 503 SERVICE_UNAVAILABLE (Retry-After): the close waited over DATABASE_WRITE_TIMEOUT_MS for the database; nothing is written, retry. SL, TP and stop-out closes are the engine's: they close at the price of the tick that reached them, however long the database took.",
        }),
      },
    )
    .delete('/close/group', ({ brand, session, body }) => closeGroup({ ctx, brand, session, input: body }), {
      auth: { roles: TRADERS, denied },
      body: t.Object(
        {
          login: Login,
          type: Int({
            minimum: -1,
            maximum: 1,
            description: '0 all, 1 only profit > 0, -1 only profit < 0',
          }),
          symbol: t.Optional(t.String({ minLength: 1, maxLength: 32, description: 'only this symbol' })),
          comment: t.Optional(
            t.String({ maxLength: 64, description: 'when given, closed orders get the comment GROUP_CLOSE' }),
          ),
        },
        { example: { login: 100001, type: 0 } },
      ),
      response: {
        200: t.Object({ data: t.Literal('OK'), closed: Int({ description: 'positions closed' }) }),
        ...errors(mergeResponses(OWN_LOGIN_MANUAL, TRADING.responses('priceStale'))),
      },
      detail: doc('Trading', 'Close many positions of a login', {
        description:
          'Positions that fail the close check (the account may not trade, the symbol is closed or its price stale, no conversion rate, or the position closed meanwhile by its SL, TP or another close) are skipped silently; the batch still answers 200 with `closed`, the number it closed. ' +
          'A fault is no skip: when the database or the cache is away or busy the request answers 503 SERVICE_UNAVAILABLE, its message saying how many positions it closed before (e.g. `database busy after closing 100 of 250 positions; retry to close the rest`), and then the positions it had closed before stay closed (their history and balance are written) while the rest stay open: ask GET /trade/list, or send the same request again, which closes what is still open. ' +
          '503 PRICE_STALE: this instance has no current price, before anything is closed; or its prices went stale between two transactions of a large group (at the edge), or the closes waited for the database until their prices were over 3 s old (those are not written, and no position is skipped for it), when the message says how many were closed before, as above. ' +
          'On a Bun server the closes are written together in the group commit, all at the prices read once for the request; at the edge (Workers) in sequence, 100 to a transaction, so a large group takes a few round trips per hundred positions, and a transaction that starts 250 ms or more after the last read of the quotes reads them and the conversion rates again (its positions close at the prices of their own time, checked again at them).',
      }),
    })
    .delete(
      '/cancel',
      async ({ brand, session, body, request, set }) =>
        marked(
          set,
          await cancelOrder({
            ctx,
            brandId: brand.id,
            actor: { session },
            input: body,
            idempotencyKey: idempotencyKeyOf(request),
          }),
        ),
      {
        auth: { roles: TRADERS, denied },
        body: t.Object({ order: Ticket }, { example: { order: 1 } }),
        response: {
          200: t.Object({ data: t.Literal('ok'), idempotent: t.Optional(Idempotent) }),
          ...errors(TRADING.responses('cancelRefused', 'manualTradingDisabled')),
        },
        detail: doc('Trading', 'Cancel a pending order', {
          idempotent: true,
          description: '401 CANCEL_PENDING_TRADE_ERROR with the reason (not found, not pending).',
        }),
      },
    )
    .get('/list', ({ brand, session, query }) => listActive({ ctx, brand, session, input: query }), {
      auth: { roles: TRADERS, denied },
      ...textInput({ query: { login: Login } }),
      response: {
        200: t.Object({ positions: t.Array(Order), orders: t.Array(Order) }),
        ...errors(OWN_LOGIN),
      },
      detail: doc('Trading', 'Open positions (live profit) and pending orders of a login'),
    })
    .get('/history', ({ brand, session, query }) => history({ ctx, brand, session, input: query }), {
      auth: { roles: TRADERS, denied },
      ...textInput({
        query: {
          login: Login,
          from: t.Optional(EpochSeconds('close time >= from')),
          to: t.Optional(EpochSeconds('close time < to')),
          limit: t.Optional(
            Int({ minimum: 1, maximum: 1000, description: 'rows per page, default 100', example: 100 }),
          ),
          cursor: t.Optional(
            t.String({ pattern: '^\\d{1,15}\\.\\d{1,15}$', description: 'next_cursor of the previous page' }),
          ),
        },
      }),
      response: {
        200: t.Object({ rows: t.Array(Order), next_cursor: t.Union([t.String(), t.Null()]) }),
        ...errors(OWN_LOGIN),
      },
      detail: doc(
        'Trading',
        'Closed, cancelled and expired orders of a login, newest first. A trigger written again after a database stall is dated at its tick, up to 50 s before it appears: poll with `from` a minute before the previous poll',
      ),
    })
