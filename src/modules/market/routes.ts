import { Elysia, t } from 'elysia'
import type { SessionType } from '../../kernel/auth/session'
import { doc, errors } from '../../kernel/http/openapi'
import { Int, Login, nameModels, textInput } from '../../kernel/http/schemas'
import { security } from '../../kernel/http/security'
import { MAX_EPOCH_MS, MAX_PRICE } from '../../kernel/limits'
import type { MarketCtx } from './context'
import { operatorGuard } from './operator'
import {
  addToWatch,
  ingestQuotes,
  removeFromWatch,
  shortList,
  symbolDetail,
  watchList,
  watchListValue,
} from './service'
import { MAX_STREAMS_PER_PRINCIPAL, quoteStream } from './stream'

const MARKET: SessionType[] = ['SESSION_USER', 'SESSION_MANAGER', 'SESSION_ADMIN', 'SESSION_DEALER']
const SymbolName = t.String({
  minLength: 1,
  maxLength: 32,
  pattern: '^[A-Za-z0-9._#-]+$',
  description: 'symbol name, e.g. EURUSD',
  example: 'EURUSD',
})
const OWN_LOGIN = { 403: ['USER_NOT_FOUND_OR_INCORRECT'], 404: ['GROUP_NOT_FOUND'] } as const
const num = t.Number()
const int = Int()
const str = t.String()

const Metrics = {
  price1d: t.Number({
    description: 'percent change of the last hourly close against the close 24 hours earlier',
  }),
  high: t.Number({ description: 'high of the last closed hourly candle (0 without candles)' }),
  low: t.Number({ description: 'low of the last closed hourly candle (0 without candles)' }),
  prices: t.Array(num, { description: 'closes of the hourly candles of the last 24 hours, oldest first' }),
}
const WatchEntry = t.Object(
  { symbol: str, sort_index: int, color: str, ...Metrics },
  { title: 'MarketWatchEntry' },
)
const WatchAdded = t.Record(t.String(), t.Object({ symbol: str, ...Metrics }), {
  description: 'one key, the symbol, holding the entry',
})
const Interval = t.Object({ open_hour: int, open_min: int, close_hour: int, close_min: int })

const SymbolDetail = t.Object(
  {
    symbol: str,
    description: str,
    currency: str,
    margin_currency: str,
    quote_currency: str,
    group: t.String({ description: 'security group (Forex, Metals, Indices, Energies, Crypto, Stocks)' }),
    digits: int,
    ask: num,
    bid: num,
    point: num,
    tick_value: num,
    tick_size: num,
    trade: Int({ description: '0 disabled, 1 close only, 2 full' }),
    spread: Int({ description: 'points; 0 = source spread (group override applied)' }),
    spread_balance: int,
    swap_enable: int,
    stops_level: int,
    long_only: int,
    profit_mode: Int({ description: '0 forex, 1 CFD, 2 futures' }),
    exemode: int,
    gtc_pendings: int,
    swap_type: Int({ description: '0 points, 1 money per lot (base currency), 2 annual interest %' }),
    swap_long: num,
    swap_short: num,
    swap_rollover3days: Int({
      description:
        "weekday (0 Sunday) whose rollover also charges the week's nights without one (1 + their number)",
    }),
    margin_divider: num,
    margin_mode: Int({ description: '0 forex, 1 CFD, 2 futures, 3 CFD index, 4 CFD leverage' }),
    margin_initial: num,
    margin_maintenance: num,
    margin_hedged: num,
    contract_size: int,
    instant_max_volume: int,
    max_volume: int,
    lot_min: t.Number({ description: 'lots' }),
    lot_max: num,
    lot_step: num,
    comm_base: num,
    comm_type: Int({ description: '0 money per lot, 1 pips, 2 percent' }),
    comm_lots: Int({ description: '0 per lot, 1 per deal' }),
    comm_agent: num,
    comm_agent_type: int,
    comm_agent_lots: int,
    comm_tax: num,
    exchange: str,
    category: str,
    industry: str,
    sector: str,
    shareholders: int,
    market_cap: num,
    icon: str,
    ratings: t.Record(t.String(), t.Unknown()),
    price1d: num,
    performance: t.Object(
      { '1W': num, '1M': num, '3M': num, '6M': num, YTD: num, '1Y': num },
      { description: 'percent, from D1 candles' },
    ),
    seasons: t.Array(t.Array(t.Union([num, t.Null()])), {
      description: 'per year (see season_years), the 12 monthly returns in percent; null without data',
    }),
    season_years: t.Array(int),
    sessions: t.Array(t.Object({ trade_overnight: int, trade: t.Array(Interval) }), {
      description: '7 days, Sunday first, server time (UTC)',
    }),
  },
  { title: 'SymbolDetail' },
)

const TickIn = t.Object({
  symbol: SymbolName,
  bid: t.Number({ exclusiveMinimum: 0, maximum: MAX_PRICE, description: 'bid price' }),
  ask: t.Number({ exclusiveMinimum: 0, maximum: MAX_PRICE, description: 'ask price, >= bid' }),
  time: t.Optional(
    Int({
      minimum: 0,
      maximum: MAX_EPOCH_MS,
      description:
        'epoch seconds or milliseconds (up to 2100); default now. More than 60 s ahead of the server or 24 h behind it: 400 INVALID_DATA',
    }),
  ),
})
const IngestBody = t.Object(
  {
    ticks: t.Array(TickIn, {
      minItems: 1,
      maxItems: 5000,
      description: 'quotes of one or more symbols, oldest first',
    }),
  },
  // BTCUSD trades every day: with this tick the trade examples that follow fill on any weekday
  {
    example: {
      ticks: [
        { symbol: 'EURUSD', bid: 1.0841, ask: 1.0842 },
        { symbol: 'BTCUSD', bid: 43_000, ask: 43_030 },
      ],
    },
  },
)
const IngestResult = t.Object({
  accepted: int,
  rejected: Int({
    description:
      'ticks not applied: the dropped ones (below), those older than the latest tick of the symbol, and those held back by the spike filter (a jump from the last price not yet confirmed by the ticks after it)',
  }),
  dropped: t.Array(
    t.Object({
      index: Int({ description: "the tick's place in `ticks`" }),
      symbol: t.String(),
      reason: t.String({ description: 'which bound it is past, naming the field (`ticks.3.ask: …`)' }),
    }),
    {
      description:
        'ticks dropped for their own data, each alone (a spread past QUOTE_MAX_SPREAD_PERCENT, a time out of range); the other ticks of the batch are applied',
    },
  ),
})

/** What every ingested quote must be, and the spike filter, as both ingest routes say. */
const INGEST_RULES =
  '400 INVALID_DATA naming the tick, nothing applied, for a malformed tick: an unknown symbol, not 0 < bid <= ask, ' +
  'a bid below one point. A tick with a spread wider than QUOTE_MAX_SPREAD_PERCENT (default 10 %) of the mid, or a time ' +
  'more than 60 s ahead of or 24 h behind the server, is dropped alone and named in `dropped`; the rest of the batch is ' +
  'applied. A tick whose mid moves more than QUOTE_SPIKE_PERCENT (default 10 %) from the last accepted price is held back ' +
  '(not applied, counted in rejected) unless the QUOTE_SPIKE_CONFIRM_TICKS (default 2) ticks after it confirm the new level.'

export const marketRoutes = (ctx: MarketCtx, operator = operatorGuard(ctx)) =>
  new Elysia({ name: 'market-routes', seed: ctx.instanceId })
    .use(security(ctx))
    .get(
      '/market/watch/list',
      // Elysia awaits a handler only when its source looks asynchronous (`return f(`): each branch says so
      ({ brand, session, query }) => {
        const prefix = query.prefix ?? ''
        if (ctx.edge) return watchListValue(ctx, brand, session, query.login, prefix)
        return watchList(ctx, brand, session, query.login, prefix)
      },
      {
        auth: { roles: MARKET },
        ...textInput({
          query: {
            login: Login,
            prefix: t.Optional(
              t.String({
                maxLength: 32,
                description: 'only symbols starting with it (case-insensitive); absent or empty: all',
                example: 'EUR',
              }),
            ),
          },
        }),
        response: { 200: t.Object({ assets: t.Record(t.String(), WatchEntry) }), ...errors(OWN_LOGIN) },
        detail: doc('Market', 'Market watch list of a login', {
          description: 'Served from the shared cache; hidden symbols left out.',
        }),
      },
    )
    .post(
      '/market/watch',
      ({ brand, session, body }) => addToWatch(ctx, brand, session, body.login, body.symbol),
      {
        auth: { roles: MARKET },
        body: t.Object(
          { login: Login, symbol: SymbolName },
          { example: { login: 100001, symbol: 'USDCHF' } },
        ),
        response: {
          200: WatchAdded,
          ...errors({ ...OWN_LOGIN, 500: ['INVALID_ADD_SYMBOL_TO_MARKET_WATCH'] }),
        },
        detail: doc('Market', 'Add a symbol to the market watch', {
          description:
            '500 INVALID_ADD_SYMBOL_TO_MARKET_WATCH when the symbol is not available for the group.',
        }),
      },
    )
    .delete(
      '/market/watch',
      ({ brand, session, body }) => removeFromWatch(ctx, brand, session, body.login, body.symbol),
      {
        auth: { roles: MARKET },
        body: t.Object(
          { login: Login, symbol: SymbolName },
          { example: { login: 100001, symbol: 'USDCHF' } },
        ),
        response: {
          200: t.Object({ data: t.Literal('OK') }),
          ...errors({ ...OWN_LOGIN, 500: ['INVALID_ADD_SYMBOL_TO_MARKET_WATCH'] }),
        },
        detail: doc('Market', 'Remove a symbol from the market watch', {
          description: '500 INVALID_ADD_SYMBOL_TO_MARKET_WATCH when it is not in the list.',
        }),
      },
    )
    .get(
      '/market/symbol',
      ({ brand, session, query }) => symbolDetail(ctx, brand, session, query.login, query.symbol),
      {
        auth: { roles: MARKET },
        ...textInput({ query: { login: Login, symbol: SymbolName } }),
        response: {
          200: SymbolDetail,
          ...errors({ 403: ['USER_NOT_FOUND_OR_INCORRECT', 'SYMBOL_NOT_ALLOWED'], 404: ['GROUP_NOT_FOUND'] }),
        },
        detail: doc('Market', "Symbol detail as the login's group sees it", {
          description:
            '403 SYMBOL_NOT_ALLOWED: hidden for the group (or unknown); 403 USER_NOT_FOUND_OR_INCORRECT; 404 GROUP_NOT_FOUND.',
        }),
      },
    )
    .get('/market/short/list', ({ brand, session, query }) => shortList(ctx, brand, session, query.login), {
      auth: { roles: MARKET },
      ...textInput({ query: { login: Login } }),
      response: {
        200: t.Object({
          assets: t.Object({ structure: t.Array(str), rows: t.Array(t.Array(t.Union([str, num]))) }),
          groups: t.Array(str, { description: 'security groups; the first is always ALL' }),
        }),
        ...errors(OWN_LOGIN),
      },
      detail: doc('Market', "All symbols visible to the login's group, as columns and rows"),
    })
    .get(
      '/market/stream',
      ({ brand, session, query, request }) => quoteStream(ctx, brand, session, query.symbols, request),
      {
        auth: { roles: MARKET },
        ...textInput({
          query: {
            symbols: t.String({
              minLength: 1,
              maxLength: 2000,
              description: 'required: 1 to 100 comma-separated symbol names',
              example: 'EURUSD,XAUUSD',
            }),
          },
        }),
        // a stream, not JSON: the document takes its 200 from the media (kernel/http/openapi-finish.ts)
        response: errors({ 429: ['TOO_MANY_REQUESTS'] }),
        detail: doc('Market', 'Live quotes as Server-Sent Events (resumable with Last-Event-ID)', {
          media: ['text/event-stream'],
          description:
            "Beyond the spec: low-latency clients subscribe instead of polling. Account sessions receive their group's prices. " +
            'text/event-stream: `event: quote`, `id: <seq>`, data {symbol, bid, ask, time}; an instance that shuts down ends its streams (reconnect with Last-Event-ID). ' +
            'Account and staff sessions (spec 4.8); a customer session is 403. An open stream checks its session every 3 seconds and ends once it no longer holds (signed out, signed out everywhere, password changed, disabled, expired): the reconnect then answers 401. It ends as well once staff moved the account to another group: the reconnect is priced, and its symbols checked, for the new group. A stream ends after 4 minutes (2 at the edge) and an EventSource reconnects with Last-Event-ID, missing nothing: the reconnect checks the session and the symbols again (a symbol hidden meanwhile stops there). A replay of more than 500 ticks, or of more than the price bus returns in one read (4,096 entries), sends the latest quote of each symbol instead. A Last-Event-ID ahead of the price bus (or not one of its ids) is answered as none: the latest quote of each symbol. Ticks that come while a resume is read follow it; no event id is sent twice or goes back. ' +
            'A client that reads slower than quotes come is not buffered without bound: past 64 KiB queued, each symbol keeps only its latest quote, sent (in bus order, ids only moving forward) once the client has read what is queued. ' +
            `429 TOO_MANY_REQUESTS beyond ${MAX_STREAMS_PER_PRINCIPAL} streams open at once per account or staff member (every session of it together, on every server instance and at the edge; a stream torn down without closing frees its place at the latest a minute after its lifetime). ` +
            "At the edge (Workers) a stream reads the price bus twice a second: quotes arrive up to half a second later than from a Bun instance (its reads count against the platform's subrequests per request). " +
            '503 SERVICE_UNAVAILABLE (in the error shape, before any event) when the price bus is away.',
        }),
      },
    )
    .post(
      '/market/quotes',
      async ({ brand, body }) => {
        await operator(brand)
        return ingestQuotes(ctx, body.ticks)
      },
      {
        // prices, many batches a second: each recorded once answered, written in groups
        auth: { roles: ['SESSION_DEALER', 'SESSION_ADMIN'], audit: 'batched' },
        body: IngestBody,
        response: { 200: IngestResult, ...errors({ 403: ['NOT_OPERATOR_BRAND'] }) },
        detail: doc('Market', 'Ingest a batch of quotes (dealer or admin session of an operator brand)', {
          description:
            'A broker plugs in its own feed here. Triggers, candles and stop-outs run on the batch. Prices are ' +
            "shared by every brand of the deployment: 403 NOT_OPERATOR_BRAND for staff of a brand not in OPERATOR_BRANDS (unset: the deployment's first brand). " +
            INGEST_RULES,
        }),
      },
    )
    .post('/feed/quotes', ({ body }) => ingestQuotes(ctx, body.ticks), {
      feed: true,
      body: IngestBody,
      response: { 200: IngestResult, ...errors() },
      detail: doc('Market', 'Ingest a batch of quotes with the feed token (FEED_TOKEN)', {
        description:
          'For a price feed process: the header X-Feed-Token carries the token configured in FEED_TOKEN. ' +
          INGEST_RULES,
      }),
    })

nameModels({ WatchEntry, SymbolDetail, QuoteIngestResult: IngestResult })
