// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { ManualClock } from '../../src/kernel/clock'
import { accounts, balanceOperations } from '../../src/modules/accounts/schema'
import { MarketPort } from '../../src/modules/market'
import { filterTick, spreadWithin } from '../../src/modules/market/domain/tick-filter'
import { symbols } from '../../src/modules/market/schema'
import { orders } from '../../src/modules/trading/schema'
import { makeTestApp } from '../support/app'

// A hostile probe of market data and accounts (staff group moves, dealer ticks, group spreads, staff
// balance operations, watch lists): each finding's fix, one describe each, on its own app.

const START = Date.UTC(2026, 0, 5, 12, 0, 0)

async function app() {
  const clock = new ManualClock(START)
  const t = await makeTestApp({ clock })
  const dealer = await t.staffToken(3, 'dealer-pass-1')
  const mgr = await t.staffToken(1, 'manager-pass-1')
  const ing = (ticks: unknown[]) => {
    clock.advance(1000)
    return t.request('POST', '/market/quotes', { token: dealer, body: { ticks } })
  }
  const groupId = async (name: string) =>
    (await t.request('GET', '/manager/groups', { token: mgr })).json.rows.find(
      (g: { name: string }) => g.name === name,
    ).id as number
  return { t, clock, dealer, mgr, ing, groupId }
}
type App = Awaited<ReturnType<typeof app>>

const open = (a: App, token: string, login: number, body: Record<string, unknown>) =>
  a.t.request('POST', '/trade/open', { token, body: { login, sl: 0, tp: 0, ...body } })

describe('a group move strands no position (finding 1)', () => {
  let a: App
  let nocrypto: number
  beforeAll(async () => {
    a = await app()
    await a.ing([
      { symbol: 'BTCUSD', bid: 40000, ask: 40010 },
      { symbol: 'ETHUSD', bid: 2000, ask: 2001 },
      { symbol: 'EURUSD', bid: 1.1, ask: 1.1001 },
    ])
    const g = await a.t.request('POST', '/manager/groups', {
      token: a.mgr,
      body: { name: 'real\\nocrypto', account_mode: 'REAL', currency: 'USD', leverage: 100 },
    })
    nocrypto = g.json.id
    await a.t.request('PUT', `/manager/groups/${nocrypto}/securities/Forex`, {
      token: a.mgr,
      body: { show: 1, trade: 1, lot_min: 1, lot_max: 10000, lot_step: 1 },
    })
  })
  afterAll(() => a.t.close())

  test('an open read before a move and committed after it is refused: the move did not see it', async () => {
    const u = await a.t.userToken(100001)
    // the account is read (cached) in its group; the move commits before the open does
    expect((await a.t.request('GET', '/account/me?login=100001', { token: u })).status).toBe(200)
    const [before] = await a.t.ctx.db.select().from(accounts).where(eq(accounts.login, 100001))
    await a.t.ctx.db.update(accounts).set({ groupId: nocrypto }).where(eq(accounts.login, 100001))
    try {
      const r = await open(a, u, 100001, { cmd: 0, volume: 1, symbol: 'BTCUSD' })
      expect([r.status, r.json.error]).toEqual([500, 'OPEN_ORDER_ERROR'])
      expect(r.json.message).toContain('moved to another group')
      const held = await a.t.ctx.db.select().from(orders).where(eq(orders.login, 100001))
      expect(held.filter((o) => o.symbol === 'BTCUSD' && o.state === 'open')).toEqual([])
    } finally {
      await a.t.ctx.db.update(accounts).set({ groupId: before!.groupId }).where(eq(accounts.login, 100001))
    }
  })

  test('refused (409, nothing changed) while the account holds a position the group cannot price', async () => {
    const u = await a.t.userToken(100001)
    const o = await open(a, u, 100001, { cmd: 0, volume: 200, symbol: 'BTCUSD' })
    expect(o.status).toBe(200)
    const [before] = await a.t.ctx.db.select().from(accounts).where(eq(accounts.login, 100001))
    const mv = await a.t.request('PATCH', '/manager/accounts/100001', {
      token: a.mgr,
      body: { group: 'real\\nocrypto', leverage: 50, comment: 'moved' },
    })
    expect(mv.status).toBe(409)
    expect(mv.json.error).toBe('GROUP_LACKS_SYMBOLS')
    expect(mv.json.message).toContain('BTCUSD')
    const [after] = await a.t.ctx.db.select().from(accounts).where(eq(accounts.login, 100001))
    // the whole PATCH is refused: no field of it was saved
    expect(after).toEqual(before)
    expect(
      (await a.t.request('POST', '/sign/in', { body: { login: 100001, password: 'demo-pass-1' } })).status,
    ).toBe(200)
    expect((await a.t.request('GET', '/manager/accounts/100001', { token: a.mgr })).status).toBe(200)
    // closed, the move goes through, and the account still reads
    expect(
      (await a.t.request('DELETE', '/trade/close', { token: u, body: { order: o.json.order } })).status,
    ).toBe(200)
    const ok = await a.t.request('PATCH', '/manager/accounts/100001', {
      token: a.mgr,
      body: { group: 'real\\nocrypto' },
    })
    expect(ok.status).toBe(200)
    expect(ok.json.group).toBe('real\\nocrypto')
    expect(
      (await a.t.request('PATCH', '/manager/accounts/100001', { token: a.mgr, body: { group: 'real\\USD' } }))
        .status,
    ).toBe(200)
  })

  test('a pending order counts too, and a symbol the group shows but does not trade', async () => {
    const u = await a.t.userToken(100001)
    const p = await open(a, u, 100001, { cmd: 2, volume: 10, symbol: 'ETHUSD', open_price: 1500 })
    expect(p.status).toBe(200)
    const mv = await a.t.request('PATCH', '/manager/accounts/100001', {
      token: a.mgr,
      body: { group: 'real\\nocrypto' },
    })
    expect(mv.status).toBe(409)
    expect(mv.json.message).toContain('ETHUSD')
    await a.t.request('PUT', `/manager/groups/${nocrypto}/securities/Crypto`, {
      token: a.mgr,
      body: { show: 1, trade: 0, lot_min: 1, lot_max: 10000, lot_step: 1 },
    })
    a.clock.advance(2000)
    const shown = await a.t.request('PATCH', '/manager/accounts/100001', {
      token: a.mgr,
      body: { group: 'real\\nocrypto' },
    })
    expect(shown.status).toBe(409)
    await a.t.request('PUT', `/manager/groups/${nocrypto}/securities/Crypto`, {
      token: a.mgr,
      body: { show: 1, trade: 1, lot_min: 1, lot_max: 10000, lot_step: 1 },
    })
    a.clock.advance(2000)
    const moved = await a.t.request('PATCH', '/manager/accounts/100001', {
      token: a.mgr,
      body: { group: 'real\\nocrypto' },
    })
    expect(moved.status).toBe(200)
    expect(
      (await a.t.request('DELETE', '/trade/cancel', { token: u, body: { order: p.json.order } })).status,
    ).toBe(200)
    expect(
      (await a.t.request('PATCH', '/manager/accounts/100001', { token: a.mgr, body: { group: 'real\\USD' } }))
        .status,
    ).toBe(200)
  })

  test("a symbol is not moved to a security group a holder's group has no settings for", async () => {
    const admin = await a.t.staffToken(2, 'admin-pass-1')
    const u = await a.t.userToken(100002)
    const o = await open(a, u, 100002, { cmd: 0, volume: 100, symbol: 'ETHUSD' })
    expect(o.status).toBe(200)
    const p = await a.t.request('PATCH', '/manager/symbols/ETHUSD', {
      token: admin,
      body: { sec_group: 'Crypto2' },
    })
    expect(p.status).toBe(409)
    expect(p.json.error).toBe('GROUP_LACKS_SYMBOLS')
    expect(p.json.message).toContain('demo\\USD')
    const [row] = await a.t.ctx.db.select().from(symbols).where(eq(symbols.symbol, 'ETHUSD'))
    expect(row!.secGroup).toBe('Crypto')
    a.clock.advance(2000)
    expect(
      (await a.t.request('POST', '/sign/in', { body: { login: 100002, password: 'demo-pass-1' } })).status,
    ).toBe(200)
    // other fields still change, and without holders the move is the admin's to make
    expect(
      (await a.t.request('PATCH', '/manager/symbols/ETHUSD', { token: admin, body: { stops_level: 5 } }))
        .status,
    ).toBe(200)
    expect(
      (await a.t.request('DELETE', '/trade/close', { token: u, body: { order: o.json.order } })).status,
    ).toBe(200)
    const free = await a.t.request('PATCH', '/manager/symbols/ETHUSD', {
      token: admin,
      body: { sec_group: 'Crypto2' },
    })
    expect(free.status).toBe(200)
  })
})

describe('the spike filter, the spread bound and old ticks (finding 2)', () => {
  let a: App
  beforeAll(async () => {
    a = await app()
    expect((await a.ing([{ symbol: 'EURUSD', bid: 1.1, ask: 1.1001 }])).status).toBe(200)
  })
  afterAll(() => a.t.close())

  const eurusd = async () => {
    const u = await a.t.userToken(100002)
    return (await a.t.request('GET', '/market/symbol?login=100002&symbol=EURUSD', { token: u })).json
  }

  test('a jump is held back and no stop-out fills at it', async () => {
    const u = await a.t.userToken(100002)
    const o = await open(a, u, 100002, { cmd: 1, volume: 100, symbol: 'EURUSD' })
    expect(o.status).toBe(200)
    const spike = await a.ing([{ symbol: 'EURUSD', bid: 1100, ask: 1100.1 }])
    expect(spike.status).toBe(200)
    expect(spike.json).toEqual({ accepted: 0, rejected: 1, dropped: [] })
    await a.t.settle()
    const [row] = await a.t.ctx.db.select().from(orders).where(eq(orders.ticket, o.json.order))
    expect(row!.state).toBe('open')
    expect((await eurusd()).bid).toBe(1.1)
    // back near the last price: taken, the held level forgotten
    expect((await a.ing([{ symbol: 'EURUSD', bid: 1.1002, ask: 1.1003 }])).json).toEqual({
      accepted: 1,
      rejected: 0,
      dropped: [],
    })
    expect(
      (await a.t.request('DELETE', '/trade/close', { token: u, body: { order: o.json.order } })).status,
    ).toBe(200)
  })

  test('a new level the ticks after it confirm is taken (a real gap)', async () => {
    const r = await a.ing([
      { symbol: 'EURUSD', bid: 1.3, ask: 1.3001 },
      { symbol: 'EURUSD', bid: 1.3002, ask: 1.3003 },
    ])
    expect(r.json).toEqual({ accepted: 0, rejected: 2, dropped: [] })
    expect((await a.ing([{ symbol: 'EURUSD', bid: 1.3001, ask: 1.3002 }])).json).toEqual({
      accepted: 1,
      rejected: 0,
      dropped: [],
    })
    expect((await eurusd()).bid).toBe(1.3001)
    expect(
      // the 1100 spike, then the two ticks at 1.3 that the third confirmed
      a.t.ports.get(MarketPort).quotes.spikesHeld('EURUSD'),
    ).toBe(3)
  })

  test('a spread past its bound drops that tick alone, named; the rest of the batch moves', async () => {
    const wide = await a.ing([
      { symbol: 'GBPUSD', bid: 0.00001, ask: 999999 },
      { symbol: 'USDJPY', bid: 151, ask: 151.01 },
    ])
    expect(wide.status).toBe(200)
    expect(wide.json).toMatchObject({ accepted: 1, rejected: 1, dropped: [{ index: 0, symbol: 'GBPUSD' }] })
    expect(wide.json.dropped[0].reason).toStartWith('ticks.0.ask: the spread')
    const u = await a.t.userToken(100002)
    const price = async (symbol: string) =>
      (await a.t.request('GET', `/market/symbol?login=100002&symbol=${symbol}`, { token: u })).json.bid
    expect(await price('USDJPY')).toBe(151)
    expect(await price('GBPUSD')).not.toBe(0.00001)
  })

  test('a tick more than a day old (or of 1970) is dropped like one from the future', async () => {
    const now = Math.floor(a.clock.now() / 1000)
    let bid = (await eurusd()).bid as number
    for (const time of [1, 120, now - 2 * 86400, (now - 86400 - 60) * 1000]) {
      bid = Math.round((bid + 0.0001) * 1e5) / 1e5
      const r = await a.ing([
        { symbol: 'AUDUSD', bid: 0.65, ask: 0.6501, time },
        { symbol: 'EURUSD', bid, ask: bid + 0.0001 },
      ])
      expect(r.status).toBe(200)
      expect(r.json).toMatchObject({ accepted: 1, rejected: 1, dropped: [{ index: 0, symbol: 'AUDUSD' }] })
      expect(r.json.dropped[0].reason).toStartWith('ticks.0.time')
    }
    expect((await a.ing([{ symbol: 'AUDUSD', bid: 0.65, ask: 0.6501, time: now - 3600 }])).json).toEqual({
      accepted: 1,
      rejected: 0,
      dropped: [],
    })
  })

  test('a malformed tick still refuses the batch: nothing of it applied', async () => {
    expect((await a.ing([{ symbol: 'USDJPY', bid: 150, ask: 150.01 }])).status).toBe(200)
    const r = await a.ing([
      { symbol: 'USDJPY', bid: 149, ask: 149.01 },
      { symbol: 'NOSUCH', bid: 1, ask: 1.1 },
    ])
    expect([r.status, r.json.error]).toEqual([400, 'INVALID_DATA'])
    expect(r.json.message).toStartWith('ticks.1.symbol')
    const u = await a.t.userToken(100002)
    const jpy = await a.t.request('GET', '/market/symbol?login=100002&symbol=USDJPY', { token: u })
    expect(jpy.json.bid).toBe(150)
  })

  test('the filter decides as MetaTrader does (pure)', () => {
    const s = { spikePercent: 10, confirmTicks: 2, maxSpreadPercent: 10 }
    expect(filterTick(s, null, undefined, 1000).apply).toBe(true)
    expect(filterTick(s, 1.1, undefined, 1.15).apply).toBe(true)
    const held = filterTick(s, 1.1, undefined, 1100, 1000)
    expect(held).toEqual({ apply: false, held: { mid: 1100, time: 1000, confirmed: 0 } })
    // the same tick again (a feed's retry, a copy in the batch) confirms nothing
    expect(filterTick(s, 1.1, held.held, 1100, 1000)).toEqual(held)
    const once = filterTick(s, 1.1, held.held, 1101, 2000)
    expect(once).toEqual({ apply: false, held: { mid: 1101, time: 2000, confirmed: 1 } })
    expect(filterTick(s, 1.1, once.held, 1101, 2000)).toEqual(once)
    expect(filterTick(s, 1.1, once.held, 1100.5, 1500)).toEqual(once)
    expect(filterTick(s, 1.1, once.held, 1100.5, 3000)).toEqual({ apply: true })
    // a second spike elsewhere starts its own count
    expect(filterTick(s, 1.1, once.held, 5, 3000)).toEqual({
      apply: false,
      held: { mid: 5, time: 3000, confirmed: 0 },
    })
    expect(filterTick({ ...s, spikePercent: 0 }, 1.1, undefined, 1100).apply).toBe(true)
    expect(spreadWithin(10, 1.1, 1.1001)).toBe(true)
    expect(spreadWithin(10, 0.00001, 999999)).toBe(false)
  })
})

describe('no group price at 0 or below (finding 3)', () => {
  let a: App
  beforeAll(async () => {
    a = await app()
  })
  afterAll(() => a.t.close())

  test('a fixed spread around a tiny price is no price: not shown, no SELL fills at it', async () => {
    const demo = await a.groupId('demo\\USD')
    expect(
      (
        await a.t.request('PUT', `/manager/groups/${demo}/symbols/USDCHF`, {
          token: a.mgr,
          body: { spread: 20 },
        })
      ).status,
    ).toBe(200)
    a.clock.advance(2000)
    // the first quote of the symbol: nothing to filter it against
    expect((await a.ing([{ symbol: 'USDCHF', bid: 0.00002, ask: 0.00002 }])).json.accepted).toBe(1)
    const u = await a.t.userToken(100002)
    const d = await a.t.request('GET', '/market/symbol?login=100002&symbol=USDCHF', { token: u })
    expect(d.status).toBe(200)
    expect(d.json.bid).toBe(0)
    expect(d.json.ask).toBe(0)
    const sell = await open(a, u, 100002, { cmd: 1, volume: 100, symbol: 'USDCHF' })
    expect(sell.status).toBe(503)
    expect(sell.json.error).toBe('PRICE_STALE')
    const buy = await open(a, u, 100002, { cmd: 0, volume: 100, symbol: 'USDCHF' })
    expect(buy.status).toBe(503)
    const rows = await a.t.ctx.db.select().from(orders).where(eq(orders.login, 100002))
    expect(rows.filter((r) => r.symbol === 'USDCHF')).toEqual([])
  })

  test('a position the group can no longer price is not stopped out at a price of 0 or below', async () => {
    const demo = await a.groupId('demo\\USD')
    const ticks = [
      { symbol: 'EURGBP', bid: 0.855, ask: 0.8551 },
      { symbol: 'GBPUSD', bid: 1.27, ask: 1.2701 },
      { symbol: 'EURUSD', bid: 1.1, ask: 1.1002 },
    ]
    expect((await a.ing(ticks)).json.accepted).toBe(3)
    const u = await a.t.userToken(100002)
    const buy = await open(a, u, 100002, { cmd: 0, volume: 100, symbol: 'EURGBP' })
    expect(buy.status).toBe(200)
    const spread = await a.t.request('PUT', `/manager/groups/${demo}/symbols/EURGBP`, {
      token: a.mgr,
      body: { spread: 20 },
    })
    expect(spread.status).toBe(200)
    a.clock.advance(2000)
    // a collapse the ticks after it confirm: the group's bid would be below zero
    for (let i = 0; i < 3; i++) await a.ing([{ symbol: 'EURGBP', bid: 0.00002, ask: 0.00002 }])
    await a.t.settle()
    const [row] = await a.t.ctx.db.select().from(orders).where(eq(orders.ticket, buy.json.order))
    expect([row!.state, row!.closePrice]).toEqual(['open', 0])
    // the account stays priced (its side counts at one point): its owner reads it
    expect((await a.t.request('GET', '/account/me?login=100002', { token: u })).status).toBe(200)
    // (valued at one point, it owes far more than it holds: the stop-out waits for a fillable price)
  })
})

describe('staff money out keeps the margin of open positions (finding 4)', () => {
  let a: App
  beforeAll(async () => {
    a = await app()
    await a.ing([{ symbol: 'EURUSD', bid: 1.1, ask: 1.1001 }])
  })
  afterAll(() => a.t.close())

  const ops = async (login: number) =>
    (await a.t.ctx.db.select().from(balanceOperations).where(eq(balanceOperations.login, login))).length

  test('a withdrawal past the free margin: 400 NOT_ENOUGH_FREE_MARGIN unless staff allow a margin call', async () => {
    const u = await a.t.userToken(100001)
    expect((await open(a, u, 100001, { cmd: 0, volume: 800, symbol: 'EURUSD' })).status).toBe(200)
    const n = await ops(100001)
    const w = await a.t.request('POST', '/manager/accounts/100001/balance', {
      token: a.mgr,
      body: { type: 'withdrawal', amount: 9000 },
    })
    expect(w.status).toBe(400)
    expect(w.json.error).toBe('NOT_ENOUGH_FREE_MARGIN')
    expect(await ops(100001)).toBe(n)
    // within the free margin it goes through
    expect(
      (
        await a.t.request('POST', '/manager/accounts/100001/balance', {
          token: a.mgr,
          body: { type: 'withdrawal', amount: 100 },
        })
      ).status,
    ).toBe(200)
    const forced = await a.t.request('POST', '/manager/accounts/100001/balance', {
      token: a.mgr,
      body: { type: 'withdrawal', amount: 9000, allow_margin_call: true },
    })
    expect(forced.status).toBe(200)
  })

  test('a credit-out past the free margin (credit included) likewise', async () => {
    // balance 25,000 and credit 20,000; 35 lots of EURUSD hold 38,500 of margin
    const c = await a.t.request('POST', '/manager/accounts/100004/balance', {
      token: a.mgr,
      body: { type: 'credit_in', amount: 20000 },
    })
    expect(c.status).toBe(200)
    const u4 = await a.t.userToken(100004, 'master-pass-1')
    expect((await open(a, u4, 100004, { cmd: 0, volume: 3500, symbol: 'EURUSD' })).status).toBe(200)
    const co = await a.t.request('POST', '/manager/accounts/100004/balance', {
      token: a.mgr,
      body: { type: 'credit_out', amount: 20000 },
    })
    expect(co.status).toBe(400)
    expect(co.json.error).toBe('NOT_ENOUGH_FREE_MARGIN')
    const forced = await a.t.request('POST', '/manager/accounts/100004/balance', {
      token: a.mgr,
      body: { type: 'credit_out', amount: 20000, allow_margin_call: true },
    })
    expect(forced.status).toBe(200)
    expect(forced.json.operation.credit_after).toBe(0)
  })
})

describe('a watch list follows a group move (finding 5)', () => {
  let a: App
  beforeAll(async () => {
    a = await app()
  })
  afterAll(() => a.t.close())

  test('the new group hides what it does not show, at once', async () => {
    const g = await a.t.request('POST', '/manager/groups', {
      token: a.mgr,
      body: { name: 'real\\nocrypto', account_mode: 'REAL', currency: 'USD', leverage: 100 },
    })
    for (const sec of ['Forex', 'Metals'])
      await a.t.request('PUT', `/manager/groups/${g.json.id}/securities/${sec}`, {
        token: a.mgr,
        body: { show: 1, trade: 1, lot_min: 1, lot_max: 100, lot_step: 1 },
      })
    const u = await a.t.userToken(100001)
    const before = await a.t.request('GET', '/market/watch/list?login=100001', { token: u })
    expect(Object.keys(before.json.assets)).toContain('BTCUSD')
    expect(
      (
        await a.t.request('PATCH', '/manager/accounts/100001', {
          token: a.mgr,
          body: { group: 'real\\nocrypto' },
        })
      ).status,
    ).toBe(200)
    const after = await a.t.request('GET', '/market/watch/list?login=100001', { token: u })
    expect(Object.keys(after.json.assets)).not.toContain('BTCUSD')
    expect(Object.keys(after.json.assets)).toContain('EURUSD')
    const prefixed = await a.t.request('GET', '/market/watch/list?login=100001&prefix=BTC', { token: u })
    expect(prefixed.json.assets).toEqual({})
  })
})
