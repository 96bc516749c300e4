// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
// Findings of the second trading probe: an SL/TP crossed by the tick that fills a pending order, modify
// against a stale quote, a partial close's remainder off the lot grid, the commission of a pending order
// that never filled, and a close that lost its race to another close or to an SL.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { ManualClock } from '../../src/kernel/clock'
import { GroupCommit } from '../../src/kernel/db/group-commit'
import { accounts } from '../../src/modules/accounts/schema'
import type { CloseRequest } from '../../src/modules/trading/commit/close-commit'
import { orders } from '../../src/modules/trading/schema'
import { makeTestApp, type TestApp } from '../support/app'
import { quoteIngest } from '../support/quotes'

// Monday 2026-01-05 15:00 UTC: forex and US stocks (14:30-21:00) trade
const clock = new ManualClock(Date.UTC(2026, 0, 5, 15, 0, 0))
let t: TestApp
let user: string
let dealer: string
let admin: string
let manager: string
const ingest = quoteIngest(
  () => t,
  clock,
  () => dealer,
)
const open = (body: Record<string, unknown>) =>
  t.request('POST', '/trade/open', { token: user, body: { login: 100001, sl: 0, tp: 0, ...body } })
const close = (body: Record<string, unknown>, key?: string) =>
  t.request('DELETE', '/trade/close', {
    token: user,
    body,
    headers: key ? { 'idempotency-key': key } : {},
  })
const modify = (body: Record<string, unknown>) => t.request('PUT', '/trade/modify', { token: user, body })
const row = async (ticket: number) =>
  (await t.ctx.db.select().from(orders).where(eq(orders.ticket, ticket)))[0]!
const balance = async () =>
  (await t.ctx.db.select().from(accounts).where(eq(accounts.login, 100001)))[0]!.balance
const FRESH = [
  { symbol: 'EURUSD', bid: 1.1, ask: 1.1001 },
  { symbol: 'GBPUSD', bid: 1.27, ask: 1.2702 },
  { symbol: 'AAPL', bid: 185, ask: 185.04 },
]

beforeAll(async () => {
  t = await makeTestApp({ clock })
  user = await t.userToken()
  dealer = await t.staffToken(3, 'dealer-pass-1')
  admin = await t.staffToken(2, 'admin-pass-1')
  manager = await t.staffToken(1, 'manager-pass-1')
  await ingest(FRESH)
})
afterAll(() => t.close())

describe('an SL or TP already crossed by the tick that fills a pending order', () => {
  test('a BUY_STOP filled at the ask while the bid is below its SL closes on that tick, at the bid', async () => {
    const stop = await open({ cmd: 4, volume: 10, symbol: 'GBPUSD', open_price: 1.275, sl: 1.274 })
    expect(stop.status).toBe(200)
    const before = await balance()
    // a wide spread: the ask reaches the stop, the bid is already past its SL
    await ingest([{ symbol: 'GBPUSD', bid: 1.2735, ask: 1.2755 }])
    await t.settle()
    const r = await row(stop.json.order)
    expect([r.state, r.closeReason, r.openPrice, r.closePrice]).toEqual(['closed', 'sl', 1.2755, 1.2735])
    // the next tick is back above the SL: nothing changes, and the loss was booked once
    await ingest([{ symbol: 'GBPUSD', bid: 1.2745, ask: 1.2747 }])
    await t.settle()
    expect((await row(stop.json.order)).state).toBe('closed')
    expect((await balance()) - before).toBe(r.profit + r.commission + r.storage)
    await ingest(FRESH)
  })

  test('a SELL_LIMIT filled on a gap past its SL closes on that tick, at the ask', async () => {
    const limit = await open({ cmd: 3, volume: 10, symbol: 'EURUSD', open_price: 1.105, sl: 1.106 })
    expect(limit.status).toBe(200)
    await ingest([{ symbol: 'EURUSD', bid: 1.107, ask: 1.1071 }])
    await t.settle()
    const r = await row(limit.json.order)
    expect([r.state, r.cmd, r.closeReason, r.openPrice, r.closePrice]).toEqual([
      'closed',
      1,
      'sl',
      1.107,
      1.1071,
    ])
    await ingest(FRESH)
    expect((await row(limit.json.order)).state).toBe('closed')
  })

  test('on a gap down a BUY_LIMIT past its SL closes at the bid, a SELL_STOP past its TP at the ask; one inside stays open', async () => {
    const buyLimit = await open({ cmd: 2, volume: 10, symbol: 'EURUSD', open_price: 1.098, sl: 1.097 })
    const sellStop = await open({ cmd: 5, volume: 10, symbol: 'EURUSD', open_price: 1.095, tp: 1.09 })
    const inside = await open({ cmd: 2, volume: 10, symbol: 'EURUSD', open_price: 1.098, sl: 1.08 })
    expect([buyLimit.status, sellStop.status, inside.status]).toEqual([200, 200, 200])
    await ingest([{ symbol: 'EURUSD', bid: 1.085, ask: 1.0851 }])
    await t.settle()
    const b = await row(buyLimit.json.order)
    expect([b.state, b.cmd, b.openPrice, b.closeReason, b.closePrice]).toEqual([
      'closed',
      0,
      1.0851,
      'sl',
      1.085,
    ])
    const s = await row(sellStop.json.order)
    expect([s.state, s.cmd, s.openPrice, s.closeReason, s.closePrice]).toEqual([
      'closed',
      1,
      1.085,
      'tp',
      1.0851,
    ])
    const i = await row(inside.json.order)
    expect([i.state, i.openPrice, i.sl]).toEqual(['open', 1.0851, 1.08])
    expect((await close({ order: i.ticket })).status).toBe(200)
    await ingest(FRESH)
  })
})

describe('modify against a stale quote', () => {
  test("a position's modify answers 503 PRICE_STALE when its symbol's quote is past max_quote_age, as its close does", async () => {
    const p = await t.request('PATCH', '/manager/symbols/GBPUSD', {
      token: admin,
      body: { max_quote_age: 10 },
    })
    expect(p.status).toBe(200)
    try {
      await ingest(FRESH)
      const o = await open({ cmd: 0, volume: 10, symbol: 'GBPUSD' })
      const pending = await open({ cmd: 2, volume: 10, symbol: 'GBPUSD', open_price: 1.26 })
      expect([o.status, pending.status]).toEqual([200, 200])
      // GBPUSD's feed stops; EURUSD's goes on
      clock.advance(60_000)
      await ingest([{ symbol: 'EURUSD', bid: 1.1, ask: 1.1001 }])
      const c = await close({ order: o.json.order })
      expect([c.status, c.json.error]).toEqual([503, 'PRICE_STALE'])
      const m = await modify({ order: o.json.order, sl: 1.268, tp: 1.275 })
      expect([m.status, m.json.error]).toEqual([503, 'PRICE_STALE'])
      const mp = await modify({ order: pending.json.order, sl: 1.25, tp: 0 })
      expect([mp.status, mp.json.error]).toEqual([503, 'PRICE_STALE'])
      expect([(await row(o.json.order)).sl, (await row(pending.json.order)).sl]).toEqual([0, 0])
      // a fresh tick: both go through
      await ingest(FRESH)
      expect((await modify({ order: o.json.order, sl: 1.268, tp: 1.275 })).status).toBe(200)
      expect((await modify({ order: pending.json.order, sl: 1.25, tp: 0 })).status).toBe(200)
      expect((await close({ order: o.json.order })).status).toBe(200)
      expect(
        (await t.request('DELETE', '/trade/cancel', { token: user, body: { order: pending.json.order } }))
          .status,
      ).toBe(200)
    } finally {
      await t.request('PATCH', '/manager/symbols/GBPUSD', { token: admin, body: { max_quote_age: 0 } })
    }
  })

  test("a position's modify outside its symbol's session is refused, as its close is", async () => {
    await ingest(FRESH)
    const o = await open({ cmd: 0, volume: 100, symbol: 'AAPL' })
    expect(o.status).toBe(200)
    const at = clock.now()
    // 22:00 UTC: AAPL's session (14:30-21:00) is over
    clock.set(Date.UTC(2026, 0, 5, 22, 0, 0))
    try {
      const m = await modify({ order: o.json.order, sl: 180, tp: 0 })
      expect([m.status, m.json.error]).toEqual([500, 'INCORRECT_SL_TP'])
      expect(m.json.message).toMatch(/market closed/)
      expect((await row(o.json.order)).sl).toBe(0)
    } finally {
      clock.set(at)
    }
    expect((await close({ order: o.json.order })).status).toBe(200)
  })
})

describe('a partial close', () => {
  test('is refused when what stays open is off the lot grid; one leaving a volume on it closes', async () => {
    const groups = (await t.request('GET', '/manager/groups', { token: manager })).json.rows as {
      id: number
      name: string
    }[]
    const me = await t.request('GET', '/account/me?login=100001', { token: user })
    const group = groups.find((g) => g.name === me.json.group)!.id
    const path = `/manager/groups/${group}/securities/Forex`
    const current = (
      await t.request('GET', `/manager/groups/${group}/trading`, { token: manager })
    ).json.securities.find((s: { sec_group: string }) => s.sec_group === 'Forex')
    // on the grid: 10, 30, 50, 70, ...
    const grid = await t.request('PUT', path, {
      token: manager,
      body: { ...current, sec_group: undefined, lot_min: 10, lot_step: 20 },
    })
    expect(grid.status).toBe(200)
    try {
      await ingest(FRESH)
      const off = await open({ cmd: 0, volume: 40, symbol: 'EURUSD' })
      expect([off.status, off.json.error]).toEqual([500, 'OPEN_ORDER_ERROR'])
      const o = await open({ cmd: 0, volume: 70, symbol: 'EURUSD' })
      expect(o.status).toBe(200)
      // 10 of 70 leaves 60 (off the grid): refused, nothing closed
      const c = await close({ order: o.json.order, volume: 10 })
      expect([c.status, c.json.error]).toEqual([500, 'TRADE_ERROR'])
      expect(c.json.message).toMatch(/^volume: the remaining 60 /)
      expect((await row(o.json.order)).volume).toBe(70)
      // 30 of 70 leaves 40: off the grid too (from 70 only the whole close stays on it)
      expect((await close({ order: o.json.order, volume: 30 })).status).toBe(500)
      expect((await row(o.json.order)).volume).toBe(70)
      expect((await close({ order: o.json.order })).status).toBe(200)
    } finally {
      const back = await t.request('PUT', path, {
        token: manager,
        body: { ...current, sec_group: undefined },
      })
      expect(back.status).toBe(200)
    }
    // the usual grid: 10 of 30 leaves 20, on it
    await ingest(FRESH)
    const o = await open({ cmd: 0, volume: 30, symbol: 'EURUSD' })
    expect((await close({ order: o.json.order, volume: 10 })).status).toBe(200)
    expect((await row(o.json.order)).volume).toBe(20)
    expect((await close({ order: o.json.order })).status).toBe(200)
  })
})

describe('a pending order that never filled charges no commission, and shows none', () => {
  test('cancelled by the client', async () => {
    await ingest(FRESH)
    const before = await balance()
    const p = await open({ cmd: 2, volume: 100, symbol: 'EURUSD', open_price: 1.09 })
    expect(p.status).toBe(200)
    // placed with the commission it would pay at its price, shown while it waits
    expect(p.json.trade.commission).toBeLessThan(0)
    expect(
      (await t.request('DELETE', '/trade/cancel', { token: user, body: { order: p.json.order } })).status,
    ).toBe(200)
    const h = await t.request('GET', '/trade/history?login=100001', { token: user })
    const shown = h.json.rows.find((r: { order: number }) => r.order === p.json.order)
    expect([shown.state, shown.commission]).toEqual(['cancelled', 0])
    expect((await row(p.json.order)).commission).toBe(0)
    expect(await balance()).toBe(before)
  })

  test('expired', async () => {
    await ingest(FRESH)
    const before = await balance()
    const p = await open({
      cmd: 2,
      volume: 100,
      symbol: 'EURUSD',
      open_price: 1.09,
      expiration: Math.floor(clock.now() / 1000) + 60,
    })
    expect(p.status).toBe(200)
    expect(p.json.trade.commission).toBeLessThan(0)
    clock.advance(120_000)
    await t.runJob('trading.expire')
    const r = await row(p.json.order)
    expect([r.state, r.commission]).toEqual(['expired', 0])
    expect(await balance()).toBe(before)
  })

  test('cancelled when reached, on an account made read-only', async () => {
    await ingest(FRESH)
    const before = await balance()
    const p = await open({ cmd: 2, volume: 100, symbol: 'EURUSD', open_price: 1.095 })
    expect(p.status).toBe(200)
    expect(p.json.trade.commission).toBeLessThan(0)
    const readOnly = (flag: number) =>
      t.request('PATCH', '/manager/accounts/100001', { token: manager, body: { enable_read_only: flag } })
    expect((await readOnly(1)).status).toBe(200)
    try {
      await ingest([{ symbol: 'EURUSD', bid: 1.0948, ask: 1.0949 }])
      await t.settle()
      const r = await row(p.json.order)
      expect([r.state, r.closeReason, r.commission]).toEqual(['cancelled', 'trade_disabled', 0])
    } finally {
      expect((await readOnly(0)).status).toBe(200)
    }
    expect(await balance()).toBe(before)
    await ingest(FRESH)
  })
})

/**
 * Holds the close of `ticket` (the group commit's submit) until `go` is called: whatever happens meanwhile
 * (another close, a tick) commits first, and the held close then finds the position moved.
 */
function holdClose(ticket: number) {
  const original = GroupCommit.prototype.submit
  let arrived!: () => void
  const reached = new Promise<void>((r) => {
    arrived = r
  })
  let go!: () => void
  const gate = new Promise<void>((r) => {
    go = r
  })
  GroupCommit.prototype.submit = function (this: GroupCommit<unknown, unknown>, input: unknown) {
    const request = input as CloseRequest
    if (request.input?.order?.ticket !== ticket) return original.call(this, input)
    GroupCommit.prototype.submit = original
    arrived()
    return gate.then(() => original.call(this, input))
  }
  return {
    reached,
    go,
    release: () => {
      GroupCommit.prototype.submit = original
      go()
    },
  }
}

describe('a close that lost its race', () => {
  test('to another close: 404, as a close of a closed position; keyed, not a replay', async () => {
    await ingest(FRESH)
    for (const key of [undefined, 'close-lost-key-1']) {
      const o = await open({ cmd: 0, volume: 10, symbol: 'EURUSD' })
      const hold = holdClose(o.json.order)
      try {
        const late = close({ order: o.json.order }, key)
        await hold.reached
        expect((await close({ order: o.json.order })).status).toBe(200)
        hold.go()
        const r = await late
        expect([r.status, r.json.error, r.json.idempotent]).toEqual([404, 'TRADE_ERROR', undefined])
        expect(r.json.message).toBe(`no open position ${o.json.order}`)
      } finally {
        hold.release()
      }
      // asked again: the same 404, never a replay of a close that did not happen
      const again = await close({ order: o.json.order }, key)
      expect([again.status, again.json.idempotent]).toEqual([404, undefined])
    }
  })

  test('to its SL: 404', async () => {
    await ingest(FRESH)
    const o = await open({ cmd: 0, volume: 10, symbol: 'EURUSD', sl: 1.095 })
    const hold = holdClose(o.json.order)
    try {
      const late = close({ order: o.json.order })
      await hold.reached
      await ingest([{ symbol: 'EURUSD', bid: 1.09, ask: 1.0901 }])
      await t.settle()
      expect((await row(o.json.order)).closeReason).toBe('sl')
      hold.go()
      const r = await late
      expect([r.status, r.json.error]).toEqual([404, 'TRADE_ERROR'])
    } finally {
      hold.release()
    }
    await ingest(FRESH)
  })

  test('to a partial close of a position still open: the retry answer (500), and the retry closes it', async () => {
    await ingest(FRESH)
    const o = await open({ cmd: 0, volume: 30, symbol: 'EURUSD' })
    const hold = holdClose(o.json.order)
    try {
      const late = close({ order: o.json.order })
      await hold.reached
      expect((await close({ order: o.json.order, volume: 10 })).status).toBe(200)
      hold.go()
      const r = await late
      expect([r.status, r.json.error]).toEqual([500, 'TRADE_ERROR'])
      expect(r.json.message).toMatch(/changed meanwhile; retry/)
    } finally {
      hold.release()
    }
    expect((await row(o.json.order)).state).toBe('open')
    expect((await close({ order: o.json.order })).status).toBe(200)
  })
})
