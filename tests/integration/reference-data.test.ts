// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { ManualClock } from '../../src/kernel/clock'
import { ReferenceData } from '../../src/modules/market/reference'
import { makeTestApp, type TestApp } from '../support/app'
import { allDay, forexSymbol } from '../support/symbols'

// Monday 12:00 UTC: forex sessions are open.
const clock = new ManualClock(Date.UTC(2026, 0, 5, 12, 0, 0))
let t: TestApp
let user: string
let manager: string
let admin: string
let dealer: string
let userGroup: number

const newSymbol = forexSymbol('NEWFX', { stops_level: 10 })

beforeAll(async () => {
  t = await makeTestApp({ clock })
  user = await t.userToken()
  manager = await t.staffToken(1, 'manager-pass-1')
  admin = await t.staffToken(2, 'admin-pass-1')
  dealer = await t.staffToken(3, 'dealer-pass-1')
  const groups = (await t.request('GET', '/manager/groups', { token: manager })).json.rows as {
    id: number
    name: string
  }[]
  const me = await t.request('GET', '/account/me?login=100001', { token: user })
  userGroup = groups.find((g) => g.name === me.json.group)!.id
})
afterAll(() => t.close())

const open = (symbol: string, volume = 10) =>
  t.request('POST', '/trade/open', {
    token: user,
    body: { login: 100001, cmd: 0, volume, symbol, sl: 0, tp: 0 },
  })

describe('symbols', () => {
  test('an admin creates a symbol; every field comes back; it trades at once for groups showing its security', async () => {
    const r = await t.request('POST', '/manager/symbols', { token: admin, body: newSymbol })
    expect(r.status).toBe(200)
    expect(r.json).toMatchObject({
      symbol: 'NEWFX',
      sec_group: 'Forex',
      digits: 5,
      contract_size: 100000,
      trade: 2,
      margin_divider: 1,
      swap_rollover3days: 3,
      sessions: allDay,
    })
    const list = await t.request('GET', '/manager/symbols', { token: dealer })
    expect(list.json.rows.map((s: { symbol: string }) => s.symbol)).toContain('NEWFX')
    await t.request('POST', '/market/quotes', {
      token: dealer,
      body: {
        ticks: [
          { symbol: 'NEWFX', bid: 1.2, ask: 1.2002 },
          // the margin of a EUR-based pair converts to the USD account through EURUSD
          { symbol: 'EURUSD', bid: 1.1, ask: 1.1001 },
        ],
      },
    })
    const detail = await t.request('GET', '/market/symbol?login=100001&symbol=NEWFX', { token: user })
    expect(detail.status).toBe(200)
    expect(detail.json.stops_level).toBe(10)
    const o = await open('NEWFX')
    expect(o.status).toBe(200)
    expect(o.json.trade.open_price).toBe(1.2002)
  })

  test('codes: 409 SYMBOL_EXISTS, 400 naming the field, 404 SYMBOL_NOT_FOUND', async () => {
    const dup = await t.request('POST', '/manager/symbols', { token: admin, body: newSymbol })
    expect(dup.status).toBe(409)
    expect(dup.json.error).toBe('SYMBOL_EXISTS')
    const sixDays = await t.request('POST', '/manager/symbols', {
      token: admin,
      body: { ...newSymbol, symbol: 'BAD1', sessions: allDay.slice(0, 6) },
    })
    expect(sixDays.status).toBe(400)
    expect(sixDays.json.error).toBe('INVALID_DATA')
    expect(sixDays.json.message).toContain('sessions')
    const backwards = await t.request('POST', '/manager/symbols', {
      token: admin,
      body: {
        ...newSymbol,
        symbol: 'BAD2',
        sessions: allDay.map(() => ({
          trade_overnight: 0,
          trade: [{ open_hour: 10, open_min: 0, close_hour: 9, close_min: 0 }],
        })),
      },
    })
    expect(backwards.status).toBe(400)
    expect(backwards.json.message).toContain('sessions.0.trade.0')
    const futures = await t.request('POST', '/manager/symbols', {
      token: admin,
      body: { ...newSymbol, symbol: 'BAD3', margin_mode: 2 },
    })
    expect(futures.status).toBe(400)
    expect(futures.json.message).toContain('margin_initial')
    const missing = await t.request('POST', '/manager/symbols', {
      token: admin,
      body: { symbol: 'BAD4', description: 'no digits' },
    })
    expect(missing.status).toBe(400)
    const unknown = await t.request('PATCH', '/manager/symbols/NOPE', { token: admin, body: { trade: 0 } })
    expect(unknown.status).toBe(404)
    expect(unknown.json.error).toBe('SYMBOL_NOT_FOUND')
    const empty = await t.request('PATCH', '/manager/symbols/NEWFX', { token: admin, body: {} })
    expect(empty.status).toBe(400)
    // nothing half-written
    const list = await t.request('GET', '/manager/symbols', { token: admin })
    expect(list.json.rows.filter((s: { symbol: string }) => s.symbol.startsWith('BAD'))).toEqual([])
  })

  test('PATCH trade 0 stops new orders on the symbol; trade 2 allows them again', async () => {
    const off = await t.request('PATCH', '/manager/symbols/NEWFX', { token: admin, body: { trade: 0 } })
    expect(off.status).toBe(200)
    expect(off.json.trade).toBe(0)
    const refused = await open('NEWFX')
    expect(refused.status).toBe(500)
    expect(refused.json.error).toBe('OPEN_ORDER_ERROR')
    expect(refused.json.message).toContain('not tradable')
    await t.request('PATCH', '/manager/symbols/NEWFX', { token: admin, body: { trade: 2 } })
    expect((await open('NEWFX')).status).toBe(200)
  })

  test('max_quote_age: a symbol whose feed stopped while others tick is not filled at its last price', async () => {
    const tick = (symbol: string, bid: number) =>
      t.request('POST', '/market/quotes', {
        token: dealer,
        body: { ticks: [{ symbol, bid, ask: bid + 0.0002 }] },
      })
    const limit = await t.request('PATCH', '/manager/symbols/NEWFX', {
      token: admin,
      body: { max_quote_age: 5 },
    })
    expect(limit.json.max_quote_age).toBe(5)
    const bad = await t.request('PATCH', '/manager/symbols/NEWFX', {
      token: admin,
      body: { max_quote_age: -1 },
    })
    expect([bad.status, bad.json.error]).toEqual([400, 'INVALID_DATA'])
    expect(bad.json.message).toContain('max_quote_age')
    await tick('NEWFX', 1.21)
    clock.advance(5_000)
    expect((await open('NEWFX')).status).toBe(200)
    // six seconds without a NEWFX tick while EURUSD ticks on
    clock.advance(1_000)
    await tick('EURUSD', 1.1)
    const stale = await open('NEWFX')
    expect([stale.status, stale.json.error]).toEqual([503, 'PRICE_STALE'])
    expect(stale.json.message).toContain('NEWFX is 6 s old')
    const position = (
      await t.request('GET', '/trade/list?login=100001', { token: user })
    ).json.positions.find((p: { symbol: string }) => p.symbol === 'NEWFX')
    const close = await t.request('DELETE', '/trade/close', { token: user, body: { order: position.order } })
    expect([close.status, close.json.error]).toEqual([503, 'PRICE_STALE'])
    // EURUSD has no limit: it trades on its own ticks
    expect((await open('EURUSD')).status).toBe(200)
    await tick('NEWFX', 1.22)
    expect((await open('NEWFX')).status).toBe(200)
    // counted from when the tick arrived, not from the feed's own time: a feed whose clock lags by 30 s
    // still trades while it ticks
    clock.advance(60_000)
    const lagging = (bid: number, lag: number) =>
      t.request('POST', '/market/quotes', {
        token: dealer,
        body: { ticks: [{ symbol: 'NEWFX', bid, ask: bid + 0.0002, time: clock.now() - lag }] },
      })
    expect((await lagging(1.23, 30_000)).json.accepted).toBe(1)
    expect((await open('NEWFX')).status).toBe(200)
    // one tick stamped 30 s ahead, then ticks at the right time: dropped as older, so the price froze
    expect((await lagging(1.24, -30_000)).json.accepted).toBe(1)
    clock.advance(3_000)
    expect((await lagging(1.25, 0)).json.accepted).toBe(0)
    expect((await open('NEWFX')).status).toBe(200)
    clock.advance(3_000)
    expect((await lagging(1.25, 0)).json.accepted).toBe(0)
    expect((await open('NEWFX')).json.error).toBe('PRICE_STALE')
    await t.request('PATCH', '/manager/symbols/NEWFX', { token: admin, body: { max_quote_age: 0 } })
    clock.advance(60_000)
    expect((await open('NEWFX')).status).toBe(200)
  })
})

describe('groups', () => {
  test('a manager creates and edits a group; levels are checked; names are unique per brand', async () => {
    const c = await t.request('POST', '/manager/groups', {
      token: manager,
      body: {
        name: 'demo\\VIP',
        account_mode: 'DEMO',
        currency: 'USD',
        leverage: 200,
        default_deposit: 5000,
      },
    })
    expect(c.status).toBe(200)
    expect(c.json).toMatchObject({
      name: 'demo\\VIP',
      leverage: 200,
      default_deposit: 5000,
      margin_call: 100,
      stop_out: 50,
    })
    const dup = await t.request('POST', '/manager/groups', {
      token: manager,
      body: { name: 'demo\\VIP', account_mode: 'DEMO', currency: 'USD', leverage: 100 },
    })
    expect(dup.status).toBe(409)
    expect(dup.json.error).toBe('GROUP_EXISTS')
    const levels = await t.request('POST', '/manager/groups', {
      token: manager,
      body: {
        name: 'demo\\X',
        account_mode: 'DEMO',
        currency: 'USD',
        leverage: 100,
        margin_call: 50,
        stop_out: 80,
      },
    })
    expect(levels.status).toBe(400)
    expect(levels.json.message).toContain('stop_out')
    const p = await t.request('PATCH', `/manager/groups/${c.json.id}`, {
      token: manager,
      body: { margin_call: 120, stop_out: 60 },
    })
    expect(p.status).toBe(200)
    expect(p.json).toMatchObject({ margin_call: 120, stop_out: 60 })
    const bad = await t.request('PATCH', `/manager/groups/${c.json.id}`, {
      token: manager,
      body: { stop_out: 130 },
    })
    expect(bad.status).toBe(400)
    const trading = await t.request('GET', `/manager/groups/${c.json.id}/trading`, { token: manager })
    expect(trading.json).toEqual({ securities: [], overrides: [] })
  })

  test("another brand's group answers 404 GROUP_NOT_FOUND and is not changed", async () => {
    const [beta] = await t.ctx.db.all<{ id: number; margin_call: number }>(
      // the Beta brand's group, read directly: no Demo route may reveal it
      sql`select id, margin_call from groups where name = 'beta\\real\\USD'`,
    )
    for (const [method, path, body] of [
      ['PATCH', `/manager/groups/${beta.id}`, { margin_call: 1 }],
      ['GET', `/manager/groups/${beta.id}/trading`, undefined],
      [
        'PUT',
        `/manager/groups/${beta.id}/securities/Forex`,
        { show: 1, trade: 1, lot_min: 1, lot_max: 100, lot_step: 1 },
      ],
      ['PUT', `/manager/groups/${beta.id}/symbols/EURUSD`, { spread: 1 }],
    ] as const) {
      const r = await t.request(method, path, { token: manager, body })
      expect(r.status).toBe(404)
      expect(r.json.error).toBe('GROUP_NOT_FOUND')
    }
    const [after] = await t.ctx.db.all<{ margin_call: number }>(
      sql`select margin_call from groups where id = ${beta.id}`,
    )
    expect(after.margin_call).toBe(beta.margin_call)
  })
})

describe('group securities and overrides', () => {
  test('hiding a security group hides its symbols from the watch list and refuses orders', async () => {
    await t.request('POST', '/market/watch', { token: user, body: { login: 100001, symbol: 'NEWFX' } })
    const before = await t.request('GET', '/market/watch/list?login=100001&prefix=', { token: user })
    expect(Object.keys(before.json.assets)).toContain('NEWFX')
    const current = (
      await t.request('GET', `/manager/groups/${userGroup}/trading`, { token: manager })
    ).json.securities.find((s: { sec_group: string }) => s.sec_group === 'Forex')
    const hideForex = () =>
      t.request('PUT', `/manager/groups/${userGroup}/securities/Forex`, {
        token: manager,
        body: { ...current, sec_group: undefined, show: 0, trade: 0 },
      })
    // refused while the account holds Forex positions: it could not close them (409, nothing changed)
    const held = await hideForex()
    expect([held.status, held.json.error]).toEqual([409, 'GROUP_LACKS_SYMBOLS'])
    const list = await t.request('GET', '/trade/list?login=100001', { token: user })
    for (const p of list.json.positions as { order: number }[]) {
      const closed = await t.request('DELETE', '/trade/close', { token: user, body: { order: p.order } })
      expect(closed.status).toBe(200)
    }
    const hide = await hideForex()
    expect(hide.status).toBe(200)
    expect(hide.json).toMatchObject({ sec_group: 'Forex', show: 0, trade: 0 })
    const after = await t.request('GET', '/market/watch/list?login=100001&prefix=', { token: user })
    expect(Object.keys(after.json.assets)).not.toContain('NEWFX')
    const refused = await open('NEWFX')
    expect(refused.json.error).toBe('OPEN_ORDER_ERROR')
    const detail = await t.request('GET', '/market/symbol?login=100001&symbol=NEWFX', { token: user })
    expect(detail.json.error).toBe('SYMBOL_NOT_ALLOWED')
    // restore, and check the volume rules
    const bad = await t.request('PUT', `/manager/groups/${userGroup}/securities/Forex`, {
      token: manager,
      body: { ...current, sec_group: undefined, lot_min: 500, lot_max: 100 },
    })
    expect(bad.status).toBe(400)
    expect(bad.json.message).toContain('lot_min')
    const unknownSec = await t.request('PUT', `/manager/groups/${userGroup}/securities/Bonds`, {
      token: manager,
      body: { show: 1, trade: 1, lot_min: 1, lot_max: 100, lot_step: 1 },
    })
    expect(unknownSec.status).toBe(400)
    const restore = await t.request('PUT', `/manager/groups/${userGroup}/securities/Forex`, {
      token: manager,
      body: { ...current, sec_group: undefined },
    })
    expect(restore.status).toBe(200)
    expect((await open('NEWFX')).status).toBe(200)
  })

  test('an override changes the spread the group trades at; deleting it restores the symbol value', async () => {
    const put = await t.request('PUT', `/manager/groups/${userGroup}/symbols/NEWFX`, {
      token: manager,
      body: { spread: 40 },
    })
    expect(put.status).toBe(200)
    expect(put.json).toEqual({ symbol: 'NEWFX', spread: 40, spread_balance: null, margin_divider: null })
    const wide = await t.request('GET', '/market/symbol?login=100001&symbol=NEWFX', { token: user })
    expect(wide.json.spread).toBe(40)
    expect(Math.round((wide.json.ask - wide.json.bid) * 1e5)).toBe(40)
    const del = await t.request('DELETE', `/manager/groups/${userGroup}/symbols/NEWFX`, { token: manager })
    expect(del.json).toEqual({ data: 'OK' })
    const again = await t.request('DELETE', `/manager/groups/${userGroup}/symbols/NEWFX`, { token: manager })
    expect(again.status).toBe(404)
    expect(again.json.error).toBe('OVERRIDE_NOT_FOUND')
    const back = await t.request('GET', '/market/symbol?login=100001&symbol=NEWFX', { token: user })
    expect(back.json.spread).toBe(0)
    // a group's first use by two lookups at once (a cold instance, an edge isolate): both see its override
    const override = await t.request('PUT', `/manager/groups/${userGroup}/symbols/NEWFX`, {
      token: manager,
      body: { spread: 40 },
    })
    expect(override.status).toBe(200)
    const cold = new ReferenceData(t.ctx.db, t.ctx.store, clock)
    await cold.fresh()
    // lookups arriving one turn apart, while the first one's reads are under way
    const lookups: Promise<unknown>[] = []
    for (let i = 0; i < 40; i++) {
      lookups.push(cold.forGroup(userGroup, 'NEWFX').then((g) => g?.spread))
      await new Promise((r) => setImmediate(r))
    }
    expect(await Promise.all(lookups)).toEqual(lookups.map(() => 40))
    expect((await cold.snapshot([userGroup]))(userGroup, 'NEWFX')?.spread).toBe(40)
    await t.request('DELETE', `/manager/groups/${userGroup}/symbols/NEWFX`, { token: manager })
    const unknown = await t.request('PUT', `/manager/groups/${userGroup}/symbols/NOPE`, {
      token: manager,
      body: { spread: 1 },
    })
    expect(unknown.status).toBe(404)
    expect(unknown.json.error).toBe('SYMBOL_NOT_FOUND')
  })
})
