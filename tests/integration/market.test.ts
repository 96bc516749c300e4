// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { and, count, desc, eq } from 'drizzle-orm'
import { RedisStore } from '../../src/kernel/cache/redis'
import { ResilientStore } from '../../src/kernel/cache/resilient'
import { ManualClock } from '../../src/kernel/clock'
import { silentLogger } from '../../src/kernel/logger'
import { candles } from '../../src/modules/market/schema'
import { SHORT_COLUMNS } from '../../src/modules/market/service'
import { STARTER_WATCH } from '../../src/modules/market/watch-defaults'
import { makeTestApp, type TestApp } from '../support/app'
import { type RedisServer, startRedis } from '../support/redis'

const clock = new ManualClock(Date.UTC(2026, 0, 5, 12, 0, 30))
const FEED = 'feed-token-for-tests-0123456789'
let t: TestApp
let redis: RedisServer
let user: string
let dealer: string

beforeAll(async () => {
  redis = await startRedis()
  t = await makeTestApp({
    clock,
    env: { SEED_HISTORY: '1', FEED_TOKEN: FEED },
    store: new ResilientStore(new RedisStore(redis.url), silentLogger, 1000),
  })
  user = await t.userToken()
  dealer = await t.staffToken(3, 'dealer-pass-1')
  await t.request('POST', '/market/quotes', {
    token: dealer,
    body: {
      ticks: [
        { symbol: 'EURUSD', bid: 1.1, ask: 1.1001 },
        { symbol: 'XAUUSD', bid: 2000, ask: 2000.3 },
      ],
    },
  })
}, 60_000)
afterAll(async () => {
  await t.close()
  await redis.stop()
})

describe('demo history', () => {
  test('at least 400 D1, 30 days of H1 and 48 hours of M1 per symbol', async () => {
    const n = async (tf: 'M1' | 'H1' | 'D1') =>
      (
        await t.ctx.db
          .select({ n: count() })
          .from(candles)
          .where(and(eq(candles.symbol, 'EURUSD'), eq(candles.timeframe, tf)))
      )[0].n
    expect(await n('D1')).toBeGreaterThanOrEqual(400)
    expect(await n('H1')).toBeGreaterThanOrEqual(30 * 24)
    expect(await n('M1')).toBeGreaterThanOrEqual(48 * 60)
  })
})

describe('market watch', () => {
  test('a demo account starts with the starter watch list; add, list, prefix filter, delete', async () => {
    const start = await t.request('GET', '/market/watch/list?login=100001&prefix=', { token: user })
    expect(Object.keys(start.json.assets)).toEqual([...STARTER_WATCH])
    const add = await t.request('POST', '/market/watch', {
      token: user,
      body: { login: 100001, symbol: 'USDCHF' },
    })
    expect(add.status).toBe(200)
    expect(Object.keys(add.json)).toEqual(['USDCHF'])
    expect(add.json.USDCHF.prices).toHaveLength(24)
    await t.request('POST', '/market/watch', { token: user, body: { login: 100001, symbol: 'XAGUSD' } })
    const list = await t.request('GET', '/market/watch/list?login=100001&prefix=', { token: user })
    expect(list.status).toBe(200)
    expect(Object.keys(list.json.assets)).toEqual([...STARTER_WATCH, 'USDCHF', 'XAGUSD'])
    const e = list.json.assets.EURUSD
    expect(e.high).toBeGreaterThanOrEqual(e.low)
    expect(e.low).toBeGreaterThan(0)
    expect(e.sort_index).toBe(0)
    const x = await t.request('GET', '/market/watch/list?login=100001&prefix=xa', { token: user })
    expect(Object.keys(x.json.assets)).toEqual(['XAUUSD', 'XAGUSD'])
    const del = await t.request('DELETE', '/market/watch', {
      token: user,
      body: { login: 100001, symbol: 'XAGUSD' },
    })
    expect(del.json).toEqual({ data: 'OK' })
    const again = await t.request('DELETE', '/market/watch', {
      token: user,
      body: { login: 100001, symbol: 'XAGUSD' },
    })
    expect([again.status, again.json.error]).toEqual([500, 'INVALID_ADD_SYMBOL_TO_MARKET_WATCH'])
    const after = await t.request('GET', '/market/watch/list?login=100001&prefix=', { token: user })
    expect(Object.keys(after.json.assets)).toEqual([...STARTER_WATCH, 'USDCHF'])
  })

  test("served from Redis, never another login's list, refreshed when an hourly candle closes", async () => {
    const keys = await new Bun.RedisClient(redis.url).send('KEYS', ['mw:v1:*'])
    expect((keys as string[]).some((k) => k.includes(':100001:'))).toBe(true)
    const demoUser = await t.userToken(100002)
    const other = await t.request('GET', '/market/watch/list?login=100002&prefix=', { token: demoUser })
    expect(Object.keys(other.json.assets)).toEqual([...STARTER_WATCH])
    const before = (await t.request('GET', '/market/watch/list?login=100001&prefix=', { token: user })).json
      .assets.EURUSD
    // Ticks across the top of the hour close the 12:00 hourly candle.
    clock.set(Date.UTC(2026, 0, 5, 12, 59, 10))
    await t.request('POST', '/market/quotes', {
      token: dealer,
      body: { ticks: [{ symbol: 'EURUSD', bid: 1.2, ask: 1.2001 }] },
    })
    clock.set(Date.UTC(2026, 0, 5, 13, 0, 5))
    await t.request('POST', '/market/quotes', {
      token: dealer,
      body: { ticks: [{ symbol: 'EURUSD', bid: 1.21, ask: 1.2101 }] },
    })
    const after = (await t.request('GET', '/market/watch/list?login=100001&prefix=', { token: user })).json
      .assets.EURUSD
    expect(after.prices[after.prices.length - 1]).toBe(1.2)
    expect(after.prices).not.toEqual(before.prices)
  })

  test('codes: unknown or hidden symbol, foreign login, validation', async () => {
    const hidden = await t.request('POST', '/market/watch', {
      token: await t.userToken(100003),
      body: { login: 100003, symbol: 'AAPL' },
    })
    expect([hidden.status, hidden.json.error]).toEqual([500, 'INVALID_ADD_SYMBOL_TO_MARKET_WATCH'])
    const foreign = await t.request('GET', '/market/watch/list?login=100002&prefix=', { token: user })
    expect([foreign.status, foreign.json.error]).toEqual([403, 'USER_NOT_FOUND_OR_INCORRECT'])
    // prefix is optional: absent means every symbol, as an empty one does
    const noPrefix = await t.request('GET', '/market/watch/list?login=100001', { token: user })
    const empty = await t.request('GET', '/market/watch/list?login=100001&prefix=', { token: user })
    expect([noPrefix.status, noPrefix.json]).toEqual([200, empty.json])
    const long = await t.request('GET', `/market/watch/list?login=100001&prefix=${'E'.repeat(33)}`, {
      token: user,
    })
    expect([long.status, long.json.error]).toEqual([400, 'INVALID_DATA'])
    expect(long.json.message).toMatch(/prefix/)
    const customer = await t.request('GET', '/market/watch/list?login=100001&prefix=', {
      token: await t.customerToken(),
    })
    expect(customer.status).toBe(403)
  })
})

describe('symbol detail and short list', () => {
  test('GET /market/symbol: fields, overrides, performance, seasons, sessions', async () => {
    const r = await t.request('GET', '/market/symbol?login=100001&symbol=XAUUSD', { token: user })
    expect(r.status).toBe(200)
    expect(r.json).toMatchObject({
      symbol: 'XAUUSD',
      digits: 2,
      contract_size: 100,
      margin_divider: 2,
      spread: 40,
      comm_base: 10,
    })
    expect(r.json.ask - r.json.bid).toBeCloseTo(0.4, 5)
    expect(Object.keys(r.json.performance)).toEqual(['1W', '1M', '3M', '6M', 'YTD', '1Y'])
    expect(r.json.performance['1Y']).not.toBe(0)
    expect(r.json.sessions).toHaveLength(7)
    expect(r.json.sessions[1].trade.length).toBeGreaterThan(0)
    expect(r.json.sessions[1].trade.length).toBeLessThanOrEqual(3)
    expect(r.json.seasons.length).toBe(r.json.season_years.length)
    for (const row of r.json.seasons) expect(row).toHaveLength(12)
    expect(r.json.seasons[0].some((v: number | null) => v === null)).toBe(true)
  })

  test('the history part of a symbol is computed once a minute from the stored bars and shared', async () => {
    const detail = async () =>
      (await t.request('GET', '/market/symbol?login=100001&symbol=XAUUSD', { token: user })).json
    const first = await detail()
    const d1 = and(eq(candles.symbol, 'XAUUSD'), eq(candles.timeframe, 'D1'))
    const [last] = await t.ctx.db.select().from(candles).where(d1).orderBy(desc(candles.time)).limit(1)
    const at = and(d1, eq(candles.time, last!.time))
    await t.ctx.db
      .update(candles)
      .set({ close: last!.close * 2 })
      .where(at)
    try {
      // the same minute: what was computed for it, without reading two years of bars again
      const same = await detail()
      expect(same.performance).toEqual(first.performance)
      expect(same.seasons).toEqual(first.seasons)
      // the next minute reads the bars as they are now
      clock.advance(60_000)
      const next = await detail()
      expect(next.performance['1W']).toBeGreaterThan(first.performance['1W'] + 50)
    } finally {
      await t.ctx.db.update(candles).set({ close: last!.close }).where(at)
    }
  })

  test('codes of GET /market/symbol', async () => {
    const eur = await t.userToken(100003)
    const hidden = await t.request('GET', '/market/symbol?login=100003&symbol=AAPL', { token: eur })
    expect([hidden.status, hidden.json.error]).toEqual([403, 'SYMBOL_NOT_ALLOWED'])
    const foreign = await t.request('GET', '/market/symbol?login=100003&symbol=EURUSD', { token: user })
    expect([foreign.status, foreign.json.error]).toEqual([403, 'USER_NOT_FOUND_OR_INCORRECT'])
    const bad = await t.request('GET', '/market/symbol?login=abc&symbol=EURUSD', { token: user })
    expect(bad.json.error).toBe('INVALID_DATA')
  })

  test('GET /market/short/list: column order, hidden left out, groups start with ALL', async () => {
    const r = await t.request('GET', '/market/short/list?login=100003', { token: await t.userToken(100003) })
    expect(r.status).toBe(200)
    expect(r.json.assets.structure).toEqual([...SHORT_COLUMNS])
    const names = r.json.assets.rows.map((row: unknown[]) => row[0])
    expect(names).not.toContain('AAPL')
    expect(names.length).toBeGreaterThanOrEqual(29)
    expect(r.json.groups[0]).toBe('ALL')
    const eurusd = r.json.assets.rows.find((row: unknown[]) => row[0] === 'EURUSD')
    expect(eurusd[SHORT_COLUMNS.indexOf('spread')]).toBe(8)
  })
})

describe('quote ingest and stream', () => {
  test('feed token route and validation', async () => {
    const none = await t.request('POST', '/feed/quotes', {
      body: { ticks: [{ symbol: 'EURUSD', bid: 1, ask: 1.1 }] },
    })
    expect([none.status, none.json.error]).toEqual([401, 'UNAUTHORIZED'])
    const ok = await t.request('POST', '/feed/quotes', {
      headers: { 'x-feed-token': FEED },
      body: {
        ticks: [{ symbol: 'EURUSD', bid: 1.1, ask: 1.1001, time: Math.floor(clock.now() / 1000) + 1 }],
      },
    })
    expect([ok.status, ok.json]).toEqual([200, { accepted: 1, rejected: 0, dropped: [] }])
    const bad = await t.request('POST', '/market/quotes', {
      token: dealer,
      body: { ticks: [{ symbol: 'NOPE', bid: 1, ask: 1.1 }] },
    })
    expect([bad.status, bad.json.error]).toEqual([400, 'INVALID_DATA'])
    const crossed = await t.request('POST', '/market/quotes', {
      token: dealer,
      body: { ticks: [{ symbol: 'EURUSD', bid: 1.2, ask: 1.1 }] },
    })
    expect(crossed.status).toBe(400)
    const userIngest = await t.request('POST', '/market/quotes', {
      token: user,
      body: { ticks: [{ symbol: 'EURUSD', bid: 1, ask: 1.1 }] },
    })
    expect(userIngest.status).toBe(403)
  })

  test('SSE: snapshot, live ticks with ids, resume with Last-Event-ID', async () => {
    const ac = new AbortController()
    const res = await t.app.handle(
      new Request('http://localhost/market/stream?symbols=EURUSD', {
        headers: { host: 'localhost', authorization: user },
        signal: ac.signal,
      }),
    )
    expect(res.headers.get('content-type')).toContain('text/event-stream')
    const reader = res.body!.getReader()
    const dec = new TextDecoder()
    let text = ''
    const readUntil = async (re: RegExp) => {
      while (!re.test(text)) text += dec.decode((await reader.read()).value)
    }
    await readUntil(/event: quote/)
    clock.advance(1000)
    await t.request('POST', '/market/quotes', {
      token: dealer,
      // within the spike filter's 10 % of the last price (1.1): a jump past it waits for confirming ticks
      body: { ticks: [{ symbol: 'EURUSD', bid: 1.15, ask: 1.1501 }] },
    })
    await readUntil(/"bid":1\.15\b/)
    const ids = [...text.matchAll(/id: (\d+-\d+)/g)].map((m) => m[1])
    expect(ids.length).toBeGreaterThanOrEqual(2)
    ac.abort()
    // Resume from the snapshot's id (the bus position before the tick): the 1.3 tick is replayed.
    const again = await t.app.handle(
      new Request('http://localhost/market/stream?symbols=EURUSD', {
        headers: { host: 'localhost', authorization: user, 'last-event-id': ids[0] },
      }),
    )
    const r2 = again.body!.getReader()
    let t2 = ''
    while (!/"bid":1\.15\b/.test(t2)) t2 += dec.decode((await r2.read()).value)
    await r2.cancel()
    const noAuth = await t.request('GET', '/market/stream?symbols=EURUSD')
    expect(noAuth.status).toBe(401)
  })

  test("SSE: a customer session is refused (it has no group's prices); a long replay sends the latest quote of each symbol", async () => {
    const customer = await t.request('GET', '/market/stream?symbols=EURUSD', {
      token: await t.customerToken(),
    })
    expect(customer.status).toBe(403)
    const ac = new AbortController()
    const open = (lastEventId?: string) =>
      t.app.handle(
        new Request('http://localhost/market/stream?symbols=EURUSD,XAUUSD', {
          headers: {
            host: 'localhost',
            authorization: user,
            ...(lastEventId ? { 'last-event-id': lastEventId } : {}),
          },
          signal: ac.signal,
        }),
      )
    // where the bus stands now: the snapshot's id
    const head = await open()
    const reader = head.body!.getReader()
    const dec = new TextDecoder()
    let text = ''
    while (!/id: \d+-\d+/.test(text)) text += dec.decode((await reader.read()).value)
    await reader.cancel()
    const from = /id: (\d+-\d+)/.exec(text)![1]!
    // 600 ticks of EURUSD, a millisecond apart (a tick no newer than the last is dropped), then one of XAUUSD
    clock.advance(60_000)
    const base = clock.now() - 1_000
    for (let i = 0; i < 6; i++)
      await t.request('POST', '/market/quotes', {
        token: dealer,
        body: {
          ticks: Array.from({ length: 100 }, (_, j) => ({
            symbol: 'EURUSD',
            bid: 1.1 + (i * 100 + j) / 1e5,
            ask: 1.1001 + (i * 100 + j) / 1e5,
            time: base + i * 100 + j,
          })),
        },
      })
    await t.request('POST', '/market/quotes', {
      token: dealer,
      body: { ticks: [{ symbol: 'XAUUSD', bid: 2001, ask: 2001.3 }] },
    })
    const again = await open(from)
    const r2 = again.body!.getReader()
    let t2 = ''
    const deadline = Date.now() + 10_000
    while ((!/"symbol":"XAUUSD"/.test(t2) || !/"bid":1\.10599\b/.test(t2)) && Date.now() < deadline)
      t2 += dec.decode((await r2.read()).value)
    await r2.cancel()
    ac.abort()
    expect(t2).toContain('"bid":1.10599')
    const events = [...t2.matchAll(/event: quote/g)].length
    expect(events).toBe(2)
  })
})
