// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
// A hostile probe of the trading core (2026-11-29): a EUR account closed a USDJPY position while EURUSD's
// feed had stopped for ten minutes (its max_quote_age 10 s) and was credited at that old rate, though a
// EURUSD trade itself answered 503 PRICE_STALE. A cross rate is a price too.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { ManualClock } from '../../src/kernel/clock'
import { TradingPort } from '../../src/modules/trading'
import { orders } from '../../src/modules/trading/schema'
import { makeTestApp, type TestApp } from '../support/app'

// a Monday noon: every forex pair in its session
const clock = new ManualClock(Date.UTC(2026, 0, 5, 12, 0, 0))
let t: TestApp
let eur: string
let dealer: string
const EUR_LOGIN = 100003

beforeAll(async () => {
  t = await makeTestApp({ clock })
  eur = await t.userToken(EUR_LOGIN)
  dealer = await t.staffToken(3, 'dealer-pass-1')
  const admin = await t.staffToken(2, 'admin-pass-1')
  for (const symbol of ['EURUSD', 'USDJPY']) {
    const r = await t.request('PATCH', `/manager/symbols/${symbol}`, {
      token: admin,
      body: { max_quote_age: 10 },
    })
    expect(r.status).toBe(200)
  }
})
afterAll(() => t.close())

const ingest = async (ticks: { symbol: string; bid: number; ask: number }[]) => {
  clock.advance(1000)
  const r = await t.request('POST', '/market/quotes', { token: dealer, body: { ticks } })
  expect(r.json.accepted).toBe(ticks.length)
}
const open = (symbol: string) =>
  t.request('POST', '/trade/open', {
    token: eur,
    body: { login: EUR_LOGIN, cmd: 0, volume: 100, symbol, sl: 0, tp: 0 },
  })
const close = (order: number) => t.request('DELETE', '/trade/close', { token: eur, body: { order } })
const row = async (ticket: number) =>
  (await t.ctx.db.select().from(orders).where(eq(orders.ticket, ticket)))[0]!
/** USDJPY keeps ticking while EURUSD, the pair that converts its yen into euros, falls silent. */
const eurusdFalls = async (seconds: number) => {
  for (let s = 0; s < seconds; s += 5) {
    clock.advance(4000)
    await ingest([{ symbol: 'USDJPY', bid: 151, ask: 151.02 }])
  }
}

describe('a cross rate whose feed stopped converts no money', () => {
  test('a close of USDJPY on a EUR account: 503 PRICE_STALE naming EURUSD, nothing closed; closed once it ticks', async () => {
    await ingest([
      { symbol: 'EURUSD', bid: 1.1, ask: 1.1001 },
      { symbol: 'USDJPY', bid: 150, ask: 150.02 },
    ])
    const o = await open('USDJPY')
    expect(o.status).toBe(200)
    await eurusdFalls(60)
    const c = await close(o.json.order)
    expect([c.status, c.json.error]).toEqual([503, 'PRICE_STALE'])
    expect(c.json.message).toStartWith('the last price of EURUSD, a cross rate of this trade')
    expect((await row(o.json.order)).state).toBe('open')
    // EURUSD itself answers the same
    expect((await open('EURUSD')).json.error).toBe('PRICE_STALE')
    await ingest([{ symbol: 'EURUSD', bid: 1.2, ask: 1.2001 }])
    expect((await close(o.json.order)).status).toBe(200)
    const closed = await row(o.json.order)
    // (151 - 150.02) * 100,000 yen / 151.02 (USD per yen, the ask) / 1.2001 (EUR per USD, the ask)
    expect(closed.profit).toBe(Math.round(((151 - 150.02) * 100_000 * 100) / 151.02 / 1.2001))
  })

  test('an open whose margin or commission converts through the silent pair: 503, nothing opened', async () => {
    await ingest([{ symbol: 'USDJPY', bid: 151, ask: 151.02 }])
    await eurusdFalls(60)
    const before = (await t.ctx.db.select().from(orders).where(eq(orders.login, EUR_LOGIN))).length
    const o = await open('USDJPY')
    expect([o.status, o.json.error]).toEqual([503, 'PRICE_STALE'])
    expect(o.json.message).toContain('EURUSD')
    expect((await t.ctx.db.select().from(orders).where(eq(orders.login, EUR_LOGIN))).length).toBe(before)
  })

  test('out of its session a pair keeps its last price as the rate (the weekend converts at the close)', async () => {
    await ingest([
      { symbol: 'EURUSD', bid: 1.2, ask: 1.2001 },
      { symbol: 'USDJPY', bid: 151, ask: 151.02 },
    ])
    const admin = await t.staffToken(2, 'admin-pass-1')
    // EURUSD's session ends for the day: its last tick stays the rate, however old
    const sessions = Array.from({ length: 7 }, () => ({ trade_overnight: 0, trade: [] }))
    const r = await t.request('PATCH', '/manager/symbols/EURUSD', { token: admin, body: { sessions } })
    expect(r.status).toBe(200)
    await eurusdFalls(60)
    const o = await open('USDJPY')
    expect(o.status).toBe(200)
    expect((await close(o.json.order)).status).toBe(200)
  })
})

test("a pending order's levels are modified while its market is closed, however old its last quote", async () => {
  const admin = await t.staffToken(2, 'admin-pass-1')
  await ingest([{ symbol: 'GBPUSD', bid: 1.27, ask: 1.2702 }])
  const p = await t.request('POST', '/trade/open', {
    token: eur,
    body: { login: EUR_LOGIN, cmd: 2, volume: 10, symbol: 'GBPUSD', open_price: 1.25, sl: 0, tp: 0 },
  })
  expect(p.status).toBe(200)
  const closed = Array.from({ length: 7 }, () => ({ trade_overnight: 0, trade: [] }))
  const r = await t.request('PATCH', '/manager/symbols/GBPUSD', {
    token: admin,
    body: { max_quote_age: 10, sessions: closed },
  })
  expect(r.status).toBe(200)
  clock.advance(3_600_000)
  const m = await t.request('PUT', '/trade/modify', {
    token: eur,
    body: { order: p.json.order, sl: 1.24, tp: 1.3 },
  })
  expect([m.status, m.json.trade?.sl]).toEqual([200, 1.24])
})

// a reviewer's finding: the close checked the result's conversion only; the swap still owed converts from
// its own currency (money per lot: the base), and a pair passed over as stale dropped it from the close
test('a close that owes swap in a currency whose pair fell silent: 503 naming it, nothing closed', async () => {
  const admin = await t.staffToken(2, 'admin-pass-1')
  const usd = await t.userToken(100001)
  const r = await t.request('PATCH', '/manager/symbols/EURJPY', {
    token: admin,
    body: { swap_enable: 1, swap_type: 1, swap_long: -5, swap_short: -5 },
  })
  expect(r.status).toBe(200)
  // EURUSD in its session again (a test above closed it)
  const open = Array.from({ length: 7 }, () => ({
    trade_overnight: 1,
    trade: [{ open_hour: 0, open_min: 0, close_hour: 24, close_min: 0 }],
  }))
  expect(
    (await t.request('PATCH', '/manager/symbols/EURUSD', { token: admin, body: { sessions: open } })).status,
  ).toBe(200)
  await ingest([
    { symbol: 'EURUSD', bid: 1.2, ask: 1.2001 },
    { symbol: 'USDJPY', bid: 151, ask: 151.02 },
    { symbol: 'EURJPY', bid: 181.2, ask: 181.23 },
  ])
  const o = await t.request('POST', '/trade/open', {
    token: usd,
    body: { login: 100001, cmd: 0, volume: 100, symbol: 'EURJPY', sl: 0, tp: 0 },
  })
  expect(o.status).toBe(200)
  // past midnight: a day's swap is owed (money per lot, in EUR), and only the yen pairs tick on
  clock.advance(86_400_000)
  dealer = await t.staffToken(3, 'dealer-pass-1')
  for (let s = 0; s < 60; s += 5) {
    clock.advance(4000)
    await ingest([
      { symbol: 'USDJPY', bid: 151, ask: 151.02 },
      { symbol: 'EURJPY', bid: 181.2, ask: 181.23 },
    ])
  }
  const usdSession = await t.userToken(100001)
  const c = await t.request('DELETE', '/trade/close', { token: usdSession, body: { order: o.json.order } })
  expect([c.status, c.json.error]).toEqual([503, 'PRICE_STALE'])
  expect(c.json.message).toContain('EURUSD')
  expect((await row(o.json.order)).state).toBe('open')
  await ingest([{ symbol: 'EURUSD', bid: 1.2, ask: 1.2001 }])
  expect(
    (await t.request('DELETE', '/trade/close', { token: usdSession, body: { order: o.json.order } })).status,
  ).toBe(200)
  expect((await row(o.json.order)).storage).toBeLessThan(0)
})

// a reviewer's finding: a copy's stops mirror a master's that trading checked at a fresh price; refused
// for a passing staleness, copy trading records the skip and never asks again (the copy kept old stops)
test("a module's modify mirrors levels at the last price; a client's waits for a fresh one", async () => {
  eur = await t.userToken(EUR_LOGIN)
  await ingest([
    { symbol: 'EURUSD', bid: 1.2, ask: 1.2001 },
    { symbol: 'USDJPY', bid: 151, ask: 151.02 },
  ])
  const o = await open('USDJPY')
  expect(o.status).toBe(200)
  clock.advance(60_000)
  eur = await t.userToken(EUR_LOGIN)
  const client = await t.request('PUT', '/trade/modify', {
    token: eur,
    body: { order: o.json.order, sl: 140, tp: 0 },
  })
  expect([client.status, client.json.error]).toEqual([503, 'PRICE_STALE'])
  const port = await t.ports.get(TradingPort).modify({
    brandId: 1,
    actor: 'copy:test',
    idempotencyKey: `copy-modify-${o.json.order}`,
    order: o.json.order,
    sl: 140,
    tp: 0,
  })
  expect(port.ok).toBe(true)
  expect((await row(o.json.order)).sl).toBe(140)
})
