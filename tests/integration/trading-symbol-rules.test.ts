// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
// A symbol's trading rules hold for every way a position starts: a market order, a pending order reaching
// its price, a copy. max_volume and gtc_pendings as the symbol admin documents them.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { ManualClock } from '../../src/kernel/clock'
import { orders } from '../../src/modules/trading/schema'
import { makeTestApp, type TestApp } from '../support/app'
import { quoteIngest } from '../support/quotes'

// Monday 2026-01-05 15:00 UTC: forex and US stocks (14:30-21:00) trade
const clock = new ManualClock(Date.UTC(2026, 0, 5, 15, 0, 0))
let t: TestApp
let user: string
let dealer: string
let admin: string
const ingest = quoteIngest(
  () => t,
  clock,
  () => dealer,
)
const open = (body: Record<string, unknown>) =>
  t.request('POST', '/trade/open', { token: user, body: { login: 100001, sl: 0, tp: 0, ...body } })
const row = async (ticket: number) =>
  (await t.ctx.db.select().from(orders).where(eq(orders.ticket, ticket)))[0]!
async function symbol(name: string, body: Record<string, unknown>) {
  const r = await t.request('PATCH', `/manager/symbols/${name}`, { token: admin, body })
  expect(r.status).toBe(200)
}
async function signIn() {
  user = await t.userToken()
  dealer = await t.staffToken(3, 'dealer-pass-1')
  admin = await t.staffToken(2, 'admin-pass-1')
}

beforeAll(async () => {
  t = await makeTestApp({ clock })
  await signIn()
  await ingest([
    { symbol: 'EURUSD', bid: 1.1, ask: 1.1001 },
    { symbol: 'GBPUSD', bid: 1.27, ask: 1.2702 },
    { symbol: 'AAPL', bid: 185, ask: 185.04 },
  ])
})
afterAll(() => t.close())

describe('a pending order reaching its price fills only where a market order would', () => {
  test('on a close-only symbol it stays pending, and fills on a tick once the symbol trades again', async () => {
    const buyLimit = await open({ cmd: 2, volume: 10, symbol: 'GBPUSD', open_price: 1.26 })
    expect(buyLimit.status).toBe(200)
    await symbol('GBPUSD', { trade: 1 })
    const market = await open({ cmd: 0, volume: 10, symbol: 'GBPUSD' })
    expect([market.status, market.json.message]).toEqual([500, 'symbol GBPUSD is close-only'])
    await ingest([{ symbol: 'GBPUSD', bid: 1.258, ask: 1.2582 }])
    expect((await row(buyLimit.json.order)).state).toBe('pending')
    await symbol('GBPUSD', { trade: 2 })
    await ingest([{ symbol: 'GBPUSD', bid: 1.2579, ask: 1.2581 }])
    const filled = await row(buyLimit.json.order)
    expect([filled.state, filled.cmd, filled.openPrice]).toEqual(['open', 0, 1.2581])
  })

  test('on a symbol not tradable for new positions, and for a sell on a long-only one, it stays pending', async () => {
    await ingest([{ symbol: 'GBPUSD', bid: 1.27, ask: 1.2702 }])
    const sellLimit = await open({ cmd: 3, volume: 10, symbol: 'GBPUSD', open_price: 1.28 })
    const buyStop = await open({ cmd: 4, volume: 10, symbol: 'GBPUSD', open_price: 1.279 })
    expect([sellLimit.status, buyStop.status]).toEqual([200, 200])
    await symbol('GBPUSD', { long_only: 1 })
    await ingest([{ symbol: 'GBPUSD', bid: 1.2805, ask: 1.2807 }])
    // the buy fills, the sell waits
    expect((await row(buyStop.json.order)).state).toBe('open')
    expect((await row(sellLimit.json.order)).state).toBe('pending')
    await symbol('GBPUSD', { long_only: 0, trade: 0 })
    await ingest([{ symbol: 'GBPUSD', bid: 1.2806, ask: 1.2808 }])
    expect((await row(sellLimit.json.order)).state).toBe('pending')
    await symbol('GBPUSD', { trade: 2 })
    await ingest([{ symbol: 'GBPUSD', bid: 1.2807, ask: 1.2809 }])
    expect((await row(sellLimit.json.order)).state).toBe('open')
  })

  test('a tick outside the trading session fills nothing; the first tick in the next session does', async () => {
    const buyLimit = await open({ cmd: 2, volume: 100, symbol: 'AAPL', open_price: 180 })
    expect(buyLimit.status).toBe(200)
    clock.set(Date.UTC(2026, 0, 5, 22, 0, 0)) // after the close
    await signIn()
    await ingest([{ symbol: 'AAPL', bid: 178, ask: 178.04 }])
    expect((await row(buyLimit.json.order)).state).toBe('pending')
    clock.set(Date.UTC(2026, 0, 6, 14, 31, 0)) // Tuesday's open
    await signIn()
    await ingest([{ symbol: 'AAPL', bid: 177.5, ask: 177.54 }])
    const filled = await row(buyLimit.json.order)
    expect([filled.state, filled.openPrice]).toEqual(['open', 177.54])
  })
})

describe("a symbol's max_volume and gtc_pendings", () => {
  test('max_volume: no order above it, market or pending; at it, one opens', async () => {
    await ingest([{ symbol: 'EURUSD', bid: 1.1, ask: 1.1001 }])
    await symbol('EURUSD', { max_volume: 20 })
    for (const body of [
      { cmd: 0, volume: 30, symbol: 'EURUSD' },
      { cmd: 2, volume: 30, symbol: 'EURUSD', open_price: 1.09 },
    ]) {
      const r = await open(body)
      expect([r.status, r.json.error, r.json.message]).toEqual([
        500,
        'OPEN_ORDER_ERROR',
        'volume: 30 is above max_volume 20',
      ])
    }
    expect((await open({ cmd: 0, volume: 20, symbol: 'EURUSD' })).status).toBe(200)
    await symbol('EURUSD', { max_volume: 0 })
    expect((await open({ cmd: 0, volume: 30, symbol: 'EURUSD' })).status).toBe(200)
  })

  test('gtc_pendings 0: a pending order lives until the end of the UTC day, and no later', async () => {
    await symbol('EURUSD', { gtc_pendings: 0 })
    const dayEnd = (Math.floor(clock.now() / 86_400_000) + 1) * 86_400
    const day = await open({ cmd: 2, volume: 10, symbol: 'EURUSD', open_price: 1.09 })
    expect([day.status, day.json.trade.expiration]).toEqual([200, dayEnd])
    const later = await open({
      cmd: 2,
      volume: 10,
      symbol: 'EURUSD',
      open_price: 1.09,
      expiration: dayEnd + 60,
    })
    expect([later.status, later.json.message]).toEqual([
      500,
      `expiration: the symbol keeps pending orders for the day only (gtc_pendings 0): at most ${dayEnd}`,
    ])
    const sooner = await open({
      cmd: 2,
      volume: 10,
      symbol: 'EURUSD',
      open_price: 1.09,
      expiration: dayEnd - 60,
    })
    expect([sooner.status, sooner.json.trade.expiration]).toEqual([200, dayEnd - 60])
    // past midnight the day order is gone
    clock.set(dayEnd * 1000 + 5_000)
    await signIn()
    await t.runJob('trading.expire')
    expect((await row(day.json.order)).state).toBe('expired')
    // good till cancelled again: no expiration unless asked
    await symbol('EURUSD', { gtc_pendings: 1 })
    await ingest([{ symbol: 'EURUSD', bid: 1.1, ask: 1.1001 }])
    const gtc = await open({ cmd: 2, volume: 10, symbol: 'EURUSD', open_price: 1.09 })
    expect([gtc.status, gtc.json.trade.expiration]).toEqual([200, 0])
  })
})

describe('risk closes wait for a current price, as a client close does', () => {
  test('a stop-out closes the positions priced now and leaves one whose feed stopped until its next tick', async () => {
    const token = await t.userToken(100002)
    await symbol('GBPUSD', { max_quote_age: 10 })
    await ingest([
      { symbol: 'EURUSD', bid: 1.1, ask: 1.1001 },
      { symbol: 'GBPUSD', bid: 1.27, ask: 1.2702 },
    ])
    const body = { login: 100002, sl: 0, tp: 0, cmd: 0 }
    const gbp = await t.request('POST', '/trade/open', {
      token,
      body: { ...body, volume: 600, symbol: 'GBPUSD' },
    })
    const eur = await t.request('POST', '/trade/open', {
      token,
      body: { ...body, volume: 100, symbol: 'EURUSD' },
    })
    expect([gbp.status, eur.status]).toEqual([200, 200])
    await ingest([{ symbol: 'GBPUSD', bid: 1.262, ask: 1.2622 }])
    // GBPUSD's feed stops; EURUSD ticks on, and its fall takes the account under its stop-out level
    clock.advance(60_000)
    await signIn()
    await ingest([{ symbol: 'EURUSD', bid: 1.1, ask: 1.1001 }])
    const manual = await t.request('DELETE', '/trade/close', {
      token: await t.userToken(100002),
      body: { order: gbp.json.order },
    })
    expect([manual.status, manual.json.error]).toEqual([503, 'PRICE_STALE'])
    await ingest([{ symbol: 'EURUSD', bid: 1.09, ask: 1.0901 }])
    // the largest loss is GBPUSD's, at a price a minute old: EURUSD is closed instead, at its current bid
    expect((await row(gbp.json.order)).state).toBe('open')
    const e = await row(eur.json.order)
    expect([e.state, e.closeReason, e.closePrice]).toEqual(['closed', 'stopout', 1.09])
    // GBPUSD's next tick is current: the stop-out goes on at it
    await ingest([{ symbol: 'GBPUSD', bid: 1.255, ask: 1.2552 }])
    const g = await row(gbp.json.order)
    expect([g.state, g.closeReason, g.closePrice]).toEqual(['closed', 'stopout', 1.255])
    await symbol('GBPUSD', { max_quote_age: 0 })
  })
})
