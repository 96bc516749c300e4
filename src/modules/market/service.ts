import { and, asc, eq, gte, inArray, lt, max } from 'drizzle-orm'
import type { Session } from '../../kernel/auth/session'
import type { Brand } from '../../kernel/brand/registry'
import { JsonCache } from '../../kernel/cache/json-cache'
import { invalid } from '../../kernel/http/errors'
import type { MarketCtx } from './context'
import { type Bar, bucket } from './domain/candles'
import { performance, price1d, seasons } from './domain/metrics'
import { spreadWithin } from './domain/tick-filter'
import { refuse } from './errors'
import { groupPrice } from './prices'
import type { GroupSymbol } from './reference'
import { candles, marketWatch } from './schema'
import { SharedVersion } from './shared-version'

const HOUR = 3600
const watchError = (m: string) => refuse('INVALID_ADD_SYMBOL_TO_MARKET_WATCH', m)

/** The account and group a market request names; another login answers 403 USER_NOT_FOUND_OR_INCORRECT. */
const marketAccount = (ctx: MarketCtx, brand: Brand, session: Session, login: number) =>
  ctx.accounts.loadAccountViewAs(brand, session, login, () =>
    refuse('USER_NOT_FOUND_OR_INCORRECT', 'login not found for this session'),
  )

interface Metrics {
  price1d: number
  high: number
  low: number
  prices: number[]
}

/** Metrics of closed hourly candles of the last 24 hours (the watch-list definition of spec 2.7). */
async function hourlyMetrics(ctx: MarketCtx, symbolList: string[]): Promise<Map<string, Metrics>> {
  const out = new Map<string, Metrics>()
  if (symbolList.length === 0) return out
  const hour = bucket(Math.floor(ctx.clock.now() / 1000), 'H1')
  const rows = await ctx.db
    .select()
    .from(candles)
    .where(
      and(
        inArray(candles.symbol, symbolList),
        eq(candles.timeframe, 'H1'),
        gte(candles.time, hour - 48 * HOUR),
        lt(candles.time, hour),
      ),
    )
    .orderBy(asc(candles.time))
  const bySymbol = new Map<string, Bar[]>()
  for (const r of rows) {
    const list = bySymbol.get(r.symbol) ?? []
    list.push(r)
    bySymbol.set(r.symbol, list)
  }
  for (const s of symbolList) {
    const bars = bySymbol.get(s) ?? []
    const last24 = bars.filter((b) => b.time >= hour - 24 * HOUR)
    const last = bars[bars.length - 1]
    out.set(s, {
      price1d: price1d(bars),
      high: last?.high ?? 0,
      low: last?.low ?? 0,
      prices: last24.map((b) => b.close),
    })
  }
  return out
}

const WATCH_VERSION = 'mw:v1:version'
/** The group is part of the key: a group move shows the list as the new group sees it, at once. */
const watchKey = (brandId: number, login: number, groupId: number, version: string) =>
  `mw:v1:${brandId}:${login}:${groupId}:${version}`

const VERSION_FRESH_MS = 250
/**
 * How long a cached list lives (the shared cache's TTL; this instance's rendered copy is served only while
 * the cache still holds the same text). The version expires lists at an hourly close and on a reference
 * data change, but a bump can be lost (Redis not answering, its retry at the edge or in a restarted
 * process gone with it): a list is then rebuilt within a minute anyway, from reference data at most 30 s
 * old. A rebuild is two indexed selects (the login's watch rows, 48 hourly candles per symbol), once per
 * polled list per minute; the request that finds the list reads the cache once, as it always did.
 */
const LIST_TTL_MS = 60_000
const versions = new WeakMap<MarketCtx, { value: string; at: number }>()
const watchVersions = new WeakMap<MarketCtx, SharedVersion>()

/** The shared candle version of watch-list keys (a new value per bump, never a repeated count). */
function sharedWatchVersion(ctx: MarketCtx) {
  let v = watchVersions.get(ctx)
  if (!v) {
    v = new SharedVersion(ctx.store, WATCH_VERSION, ctx.edge)
    watchVersions.set(ctx, v)
  }
  return v
}

/**
 * Bumped when an hourly candle closes or reference data changes (the cached lists then expire by key). A
 * counter could come back to a value after a Redis restart and serve a list cached under it before the
 * change; a bump Redis did not take is sent again until it is (shared-version.ts).
 */
export async function bumpWatchVersion(ctx: MarketCtx) {
  versions.delete(ctx)
  await sharedWatchVersion(ctx).bump()
}

/**
 * The candle version of watch-list keys, re-read from the shared cache at most every 250 ms: another
 * instance's hourly close reaches this one within that, this instance's own at once. While the cache does
 * not answer (null), lists are built from the database and not cached.
 */
async function watchVersion(ctx: MarketCtx): Promise<string | null> {
  const now = ctx.clock.now()
  const v = versions.get(ctx)
  if (v && now - v.at >= 0 && now - v.at < VERSION_FRESH_MS) return v.value
  const value = await sharedWatchVersion(ctx).read()
  if (value !== null) versions.set(ctx, { value, at: now })
  return value
}

type WatchEntry = Metrics & { symbol: string; sort_index: number; color: string }

/** A cached list as this instance last saw it: the text, its bytes ready to send, its decoded entries. */
interface Rendered {
  raw: string
  body: Blob
  assets?: Record<string, WatchEntry>
}
const rendered = new WeakMap<MarketCtx, { lists: Map<string, Rendered>; bytes: number }>()
/**
 * What the lists kept here may weigh (their text about three times over: the string, its Blob, the decoded
 * copy): a Worker isolate has 128 MB for everything, a server more. Past it they are dropped and read again.
 */
const memoBytes = (ctx: MarketCtx) => (ctx.edge ? 8 : 64) * 1024 * 1024

/**
 * A login's watch list, served from the shared cache under a key holding the brand, the login, its group
 * and the candle version, so a list is never served to another login and expires when an hourly candle closes
 * or the list changes (add/delete delete the key), and a minute after it was built in any case (LIST_TTL_MS). The cache holds the rendered answer: the full list
 * (empty prefix, what clients poll) is sent byte for byte from a Blob kept while the cached text stays
 * the same (building a Response from a string with header options cost more than the cache lookup); a
 * prefix filters the decoded copy. Both are sent as built (a Response), which is what the route's
 * documented schema describes.
 */
export async function watchList(
  ctx: MarketCtx,
  brand: Brand,
  session: Session,
  login: number,
  prefix: string,
): Promise<Response> {
  const r = await renderedWatchList(ctx, brand, session, login)
  if (prefix === '') return new Response(r.body)
  return Response.json({ assets: withPrefix(r, prefix) })
}

/**
 * The same answer as a value, for the edge: Elysia's dynamic mode (Workers) validates a Response the
 * handler returns as if it were the body, so there the route answers the object.
 */
export async function watchListValue(
  ctx: MarketCtx,
  brand: Brand,
  session: Session,
  login: number,
  prefix: string,
): Promise<{ assets: Record<string, WatchEntry> }> {
  return { assets: withPrefix(await renderedWatchList(ctx, brand, session, login), prefix) }
}

async function renderedWatchList(ctx: MarketCtx, brand: Brand, session: Session, login: number) {
  const { account, group } = await marketAccount(ctx, brand, session, login)
  const version = await watchVersion(ctx)
  if (version === null) {
    const fresh = JSON.stringify({ assets: await buildWatchList(ctx, account.login, group.id) })
    return { raw: fresh, body: new Blob([fresh], { type: 'application/json' }) }
  }
  const key = watchKey(brand.id, account.login, group.id, version)
  let raw = await ctx.store.get(key)
  if (!raw) {
    raw = JSON.stringify({ assets: await buildWatchList(ctx, account.login, group.id) })
    await ctx.store.set(key, raw, LIST_TTL_MS)
  }
  let memo = rendered.get(ctx)
  if (!memo) {
    memo = { lists: new Map(), bytes: 0 }
    rendered.set(ctx, memo)
  }
  let r = memo.lists.get(key)
  if (!r || r.raw !== raw) {
    if (r) memo.bytes -= 3 * r.raw.length
    if (memo.lists.size >= 10_000 || memo.bytes + 3 * raw.length > memoBytes(ctx)) {
      memo.lists.clear()
      memo.bytes = 0
    }
    r = { raw, body: new Blob([raw], { type: 'application/json' }) }
    memo.lists.set(key, r)
    memo.bytes += 3 * raw.length
  }
  return r
}

/** The entries whose symbol starts with `prefix` (case-insensitive); all of them for an empty one. */
function withPrefix(r: Rendered, prefix: string): Record<string, WatchEntry> {
  r.assets ??= (JSON.parse(r.raw) as { assets: Record<string, WatchEntry> }).assets
  if (prefix === '') return r.assets
  const p = prefix.toUpperCase()
  const assets: Record<string, WatchEntry> = {}
  for (const [symbol, e] of Object.entries(r.assets))
    if (symbol.toUpperCase().startsWith(p)) assets[symbol] = e
  return assets
}

/** The entries of a watch list in its order, hidden symbols left out. */
async function buildWatchList(ctx: MarketCtx, login: number, groupId: number) {
  const rows = await ctx.db
    .select()
    .from(marketWatch)
    .where(eq(marketWatch.login, login))
    .orderBy(asc(marketWatch.sortIndex))
  const visible: typeof rows = []
  for (const r of rows) {
    const gs = await ctx.refdata.forGroup(groupId, r.symbol)
    if (gs && gs.sec.show === 1) visible.push(r)
  }
  const metrics = await hourlyMetrics(
    ctx,
    visible.map((r) => r.symbol),
  )
  const assets: Record<string, WatchEntry> = {}
  for (const r of visible)
    assets[r.symbol] = {
      symbol: r.symbol,
      sort_index: r.sortIndex,
      color: r.color,
      ...metrics.get(r.symbol)!,
    }
  return assets
}

async function visibleSymbol(ctx: MarketCtx, groupId: number, symbol: string): Promise<GroupSymbol | null> {
  const gs = await ctx.refdata.forGroup(groupId, symbol)
  return gs && gs.sec.show === 1 ? gs : null
}

/**
 * Drops the login's cached list under the shared version, not this instance's copy (the key readers use
 * now). When the cache did not answer, the list may still be there once it does: every list's version is
 * bumped instead (sent again until the cache takes it).
 */
async function dropWatchCache(ctx: MarketCtx, brandId: number, login: number, groupId: number) {
  const version = await sharedWatchVersion(ctx).read()
  if (version !== null) await ctx.store.del(watchKey(brandId, login, groupId, version))
  if (version === null || ctx.store.dependency?.up === false) await bumpWatchVersion(ctx)
}

export async function addToWatch(
  ctx: MarketCtx,
  brand: Brand,
  session: Session,
  login: number,
  symbol: string,
) {
  const { account, group } = await marketAccount(ctx, brand, session, login)
  if (!(await visibleSymbol(ctx, group.id, symbol)))
    throw watchError(`symbol ${symbol} is not available for group ${group.name}`)
  await ctx.db.transaction(async (tx) => {
    const [m] = await tx
      .select({ max: max(marketWatch.sortIndex) })
      .from(marketWatch)
      .where(eq(marketWatch.login, account.login))
    await tx
      .insert(marketWatch)
      .values({ login: account.login, symbol, sortIndex: (m?.max ?? -1) + 1 })
      .onConflictDoNothing()
  })
  await dropWatchCache(ctx, brand.id, account.login, group.id)
  const metrics = (await hourlyMetrics(ctx, [symbol])).get(symbol)!
  return {
    [symbol]: {
      symbol,
      price1d: metrics.price1d,
      high: metrics.high,
      low: metrics.low,
      prices: metrics.prices,
    },
  }
}

export async function removeFromWatch(
  ctx: MarketCtx,
  brand: Brand,
  session: Session,
  login: number,
  symbol: string,
) {
  const { account, group } = await marketAccount(ctx, brand, session, login)
  const removed = await ctx.db.transaction((tx) =>
    tx
      .delete(marketWatch)
      .where(and(eq(marketWatch.login, account.login), eq(marketWatch.symbol, symbol)))
      .returning(),
  )
  if (removed.length === 0)
    throw watchError(`symbol ${symbol} is not in the market watch of ${account.login}`)
  await dropWatchCache(ctx, brand.id, account.login, group.id)
  return { data: 'OK' as const }
}

/** The symbol fields of 2.8/2.9 as a group sees them (overrides and group security settings applied). */
async function symbolFields(ctx: MarketCtx, gs: GroupSymbol) {
  const i = gs.info
  const q = await groupPrice(ctx.quotes, gs)
  return {
    symbol: i.symbol,
    description: i.description,
    currency: i.currency,
    margin_currency: i.marginCurrency,
    quote_currency: i.quoteCurrency,
    group: i.secGroup,
    digits: i.digits,
    trade: i.trade,
    spread: gs.spread,
    spread_balance: gs.spreadBalance,
    swap_enable: i.swapEnable,
    margin_divider: gs.marginDivider,
    margin_mode: i.marginMode,
    stops_level: i.stopsLevel,
    contract_size: i.contractSize,
    long_only: i.longOnly,
    ask: q?.ask ?? 0,
    bid: q?.bid ?? 0,
    point: 10 ** -i.digits,
    tick_value: i.tickValue,
    tick_size: i.tickSize,
    lot_min: gs.sec.lotMin / 100,
    lot_max: gs.sec.lotMax / 100,
    lot_step: gs.sec.lotStep / 100,
    comm_base: gs.sec.commBase,
    comm_type: gs.sec.commType,
    exchange: i.exchange,
    category: i.category,
    industry: i.industry,
    shareholders: i.shareholders,
    market_cap: i.marketCap,
    icon: i.icon,
  }
}

interface SymbolHistory {
  price1d: number
  performance: ReturnType<typeof performance>
  seasons: (number | null)[][]
  seasonYears: number[]
}

const historyCaches = new WeakMap<MarketCtx, JsonCache>()

/**
 * What a symbol's detail derives from its stored bars: two years of D1 and two days of H1, ~550 rows
 * read and parsed per request. The stored bars change when a minute's bars are rolled into them (closed
 * minutes only), so the result is shared by every request and instance for the minute it was computed in.
 */
async function symbolHistory(ctx: MarketCtx, symbol: string): Promise<SymbolHistory> {
  let cache = historyCaches.get(ctx)
  if (!cache) {
    cache = new JsonCache(ctx.store, 90_000)
    historyCaches.set(ctx, cache)
  }
  const now = Math.floor(ctx.clock.now() / 1000)
  const minute = Math.floor(now / 60)
  return (await cache.get<SymbolHistory>(`mkt:history:v1:${symbol}:${minute}`, async () => {
    const d1 = await ctx.candles.range(symbol, 'D1', now - 2 * 366 * 86400)
    const h1 = await ctx.candles.range(symbol, 'H1', now - 2 * 86400)
    const s = seasons(d1)
    return {
      price1d: price1d(h1.filter((b) => b.time < bucket(now, 'H1'))),
      performance: performance(d1, now),
      seasons: s.rows,
      seasonYears: s.years,
    }
  }))!
}

export async function symbolDetail(
  ctx: MarketCtx,
  brand: Brand,
  session: Session,
  login: number,
  symbol: string,
) {
  const { group } = await marketAccount(ctx, brand, session, login)
  const gs = await visibleSymbol(ctx, group.id, symbol)
  if (!gs) throw refuse('SYMBOL_NOT_ALLOWED', `symbol ${symbol} is not available for group ${group.name}`)
  const i = gs.info
  const history = await symbolHistory(ctx, symbol)
  return {
    ...(await symbolFields(ctx, gs)),
    price1d: history.price1d,
    profit_mode: i.profitMode,
    exemode: i.exemode,
    gtc_pendings: i.gtcPendings,
    swap_type: i.swapType,
    swap_long: i.swapLong,
    swap_short: i.swapShort,
    swap_rollover3days: i.swapRollover3days,
    margin_initial: i.marginInitial,
    margin_maintenance: i.marginMaintenance,
    margin_hedged: i.marginHedged,
    instant_max_volume: i.instantMaxVolume,
    max_volume: i.maxVolume,
    comm_lots: gs.sec.commLots,
    comm_agent: gs.sec.commAgent,
    comm_agent_type: gs.sec.commAgentType,
    comm_agent_lots: gs.sec.commAgentLots,
    comm_tax: gs.sec.commTax,
    sector: i.sector,
    ratings: JSON.parse(i.ratings) as Record<string, unknown>,
    performance: history.performance,
    seasons: history.seasons,
    season_years: history.seasonYears,
    sessions: i.sessionList,
  }
}

export const SHORT_COLUMNS = [
  'symbol',
  'description',
  'currency',
  'margin_currency',
  'quote_currency',
  'group',
  'digits',
  'trade',
  'spread',
  'spread_balance',
  'swap_enable',
  'margin_divider',
  'margin_mode',
  'stops_level',
  'contract_size',
  'long_only',
  'ask',
  'bid',
  'point',
  'tick_value',
  'tick_size',
  'lot_min',
  'lot_max',
  'lot_step',
  'comm_base',
  'comm_type',
  'exchange',
  'category',
  'industry',
  'shareholders',
  'market_cap',
  'price1d',
  'icon',
] as const

export async function shortList(ctx: MarketCtx, brand: Brand, session: Session, login: number) {
  const { group } = await marketAccount(ctx, brand, session, login)
  const visible = await ctx.refdata.visible(group.id)
  const metrics = await hourlyMetrics(
    ctx,
    visible.map((g) => g.info.symbol),
  )
  const rows = []
  for (const gs of visible) {
    const f = { ...(await symbolFields(ctx, gs)), price1d: metrics.get(gs.info.symbol)?.price1d ?? 0 }
    rows.push(SHORT_COLUMNS.map((c) => f[c]))
  }
  const groups = ['ALL', ...new Set(visible.map((g) => g.info.secGroup))]
  return { assets: { structure: [...SHORT_COLUMNS], rows }, groups }
}

/**
 * How far ahead of this server's clock a tick's time may be. A later tick of the symbol is dropped as old
 * until its time passes: one tick from a feed whose clock is off (or in the wrong unit) froze the price.
 */
export const TICK_AHEAD_MS = 60_000
/**
 * How far behind it: a tick of 1970 (a feed's zero time, seconds taken for milliseconds) or of yesterday
 * is no price the symbol trades at now, and would write its candles into the past.
 */
export const TICK_BEHIND_MS = 86_400_000

/**
 * Ingest batch validation. A malformed tick refuses the batch (400, nothing applied): an unknown symbol,
 * not 0 < bid <= ask, a bid below one point at the symbol's digits; those are the feed's bug. A tick whose
 * data is out of bounds (a spread past QUOTE_MAX_SPREAD_PERCENT of the mid, a time more than a day before
 * or a minute after the server's clock) is what a live feed sends in a fast or broken market: it is dropped
 * alone and named in the answer, and the other symbols of the batch keep their prices moving. The spike
 * filter (QuoteHub.apply) then holds back jumps not yet confirmed: counted as rejected.
 */
export async function ingestQuotes(
  ctx: MarketCtx,
  ticks: { symbol: string; bid: number; ask: number; time?: number }[],
) {
  await ctx.refdata.fresh()
  const now = ctx.clock.now()
  const times = ticks.map((t) => (t.time ? (t.time > 1e12 ? t.time : t.time * 1000) : now))
  const dropped: { index: number; symbol: string; reason: string }[] = []
  const { maxSpreadPercent } = ctx.settings.tickFilter
  ticks.forEach((t, i) => {
    const info = ctx.refdata.symbol(t.symbol)
    if (!info) throw invalid(`ticks.${i}.symbol: unknown symbol ${t.symbol}`)
    if (!(t.bid > 0 && t.ask >= t.bid)) throw invalid(`ticks.${i}: bid must be > 0 and <= ask`)
    // a price that rounds to 0 at the symbol's digits would fill stops and limits at 0
    const point = 10 ** -info.digits
    if (Math.round(t.bid * 10 ** info.digits) <= 0)
      throw invalid(`ticks.${i}.bid: at least one point of ${t.symbol} (${point})`)
    const reason = !spreadWithin(maxSpreadPercent, t.bid, t.ask)
      ? `ticks.${i}.ask: the spread is more than ${maxSpreadPercent} % of the mid price`
      : times[i]! > now + TICK_AHEAD_MS
        ? `ticks.${i}.time: more than ${TICK_AHEAD_MS / 1000} s ahead of the server's clock`
        : times[i]! < now - TICK_BEHIND_MS
          ? `ticks.${i}.time: more than ${TICK_BEHIND_MS / 3_600_000} h behind the server's clock`
          : null
    if (reason) dropped.push({ index: i, symbol: t.symbol, reason })
  })
  const out = new Set(dropped.map((d) => d.index))
  const accepted = await ctx.quotes.apply(
    ticks.flatMap((t, i) =>
      out.has(i) ? [] : [{ symbol: t.symbol, bid: t.bid, ask: t.ask, time: times[i]! }],
    ),
  )
  return { accepted: accepted.length, rejected: ticks.length - accepted.length, dropped }
}
