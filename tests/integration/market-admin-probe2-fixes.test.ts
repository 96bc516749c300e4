// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
// Fixes of the staff-brand probe on market's reference-data administration (admin.ts, admin-routes.ts):
// a symbol's price grid (digits, tick_size) and margin dividers.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { ManualClock } from '../../src/kernel/clock'
import { makeTestApp, type TestApp } from '../support/app'
import { quoteIngest } from '../support/quotes'
import { forexSymbol } from '../support/symbols'

const clock = new ManualClock(Date.UTC(2026, 0, 5, 12, 0, 0))
let t: TestApp
let admin: string
let manager: string
let dealer: string
let user: string
const ingest = quoteIngest(
  () => t,
  clock,
  () => dealer,
)

beforeAll(async () => {
  t = await makeTestApp({ clock })
  manager = await t.staffToken(1, 'manager-pass-1')
  admin = await t.staffToken(2, 'admin-pass-1')
  dealer = await t.staffToken(3, 'dealer-pass-1')
  user = await t.userToken()
})
afterAll(() => t.close())

const open = (symbol: string) =>
  t.request('POST', '/trade/open', {
    token: user,
    body: { login: 100001, cmd: 0, volume: 10, symbol, sl: 0, tp: 0 },
  })
const patchSymbol = (symbol: string, body: Record<string, unknown>) =>
  t.request('PATCH', `/manager/symbols/${symbol}`, { token: admin, body })
const symbolRow = async (symbol: string) =>
  ((await t.request('GET', '/manager/symbols', { token: admin })).json.rows as any[]).find(
    (r) => r.symbol === symbol,
  )
const userGroupId = async () => {
  const acct = (await t.request('GET', '/manager/accounts/100001', { token: manager })).json
  const groups = (await t.request('GET', '/manager/groups', { token: manager })).json.rows as any[]
  return groups.find((x) => x.name === acct.group).id as number
}

describe('PATCH /manager/symbols/:symbol digits and tick_size', () => {
  test('digits fewer than tick_size needs (0 for a 0.00001 tick) is refused 400 INVALID_DATA, or at least open positions stay valued at the market', async () => {
    await ingest([{ symbol: 'EURUSD', bid: 1.1, ask: 1.1001 }])
    const pos = await open('EURUSD')
    expect(pos.status).toBe(200)
    const patch = await patchSymbol('EURUSD', { digits: 0 })
    clock.advance(1000)
    await ingest([{ symbol: 'EURUSD', bid: 1.1002, ask: 1.1003 }])
    const list = await t.request('GET', '/trade/list?login=100001', { token: user })
    const p = list.json.positions.find((x: any) => x.order === pos.json.order)
    // before the fix: the patch answered 200 and the 0.10-lot long opened at 1.1001 showed close_price 1
    // and profit -1001 USD with the market at 1.1002 (every brand's EURUSD positions); a new SELL filled at 1
    const refused = patch.status === 400 && patch.json.error === 'INVALID_DATA'
    expect({
      refusedOrAtMarket: refused || p.close_price === 1.1002,
      patch: patch.status,
      closePrice: p.close_price,
    }).toMatchObject({
      refusedOrAtMarket: true,
    })
    expect([patch.status, patch.json.error]).toEqual([400, 'INVALID_DATA'])
    expect(patch.json.message).toMatch(/^digits: /)
    expect(p.close_price).toBe(1.1002)
    expect((await symbolRow('EURUSD')).digits).toBe(5)
  })

  test('a tick_size that is no whole number of points is refused 400 naming the field, on create and on a patch', async () => {
    for (const [tick, digits] of [
      [0.000003, 5],
      [0.3, 0],
      [0.000015, 5],
    ] as const) {
      const r = await t.request('POST', '/manager/symbols', {
        token: admin,
        body: forexSymbol('GRIDBAD', { tick_size: tick, digits }),
      })
      expect([tick, r.status, r.json.error]).toEqual([tick, 400, 'INVALID_DATA'])
      expect(r.json.message).toMatch(/^tick_size: /)
    }
    expect(await symbolRow('GRIDBAD')).toBeUndefined()
    // a multiple of the point is taken (0.3 with digits 5 is 30000 points)
    const ok = await t.request('POST', '/manager/symbols', {
      token: admin,
      body: forexSymbol('GRIDOK', { tick_size: 0.3, digits: 5 }),
    })
    expect(ok.status).toBe(200)
    const finer = await patchSymbol('GRIDOK', { tick_size: 0.000001 })
    expect([finer.status, finer.json.error]).toEqual([400, 'INVALID_DATA'])
    expect(finer.json.message).toMatch(/^tick_size: /)
    // nobody holds GRIDOK: the grid may change both ways, consistently
    const coarse = await patchSymbol('GRIDOK', { digits: 2, tick_size: 0.01 })
    expect([coarse.status, coarse.json.digits, coarse.json.tick_size]).toEqual([200, 2, 0.01])
    const other = await patchSymbol('GRIDOK', { stops_level: 5 })
    expect(other.status).toBe(200)
  })

  // (99c49c5 took more digits while held, "prices only get finer"; a point is also the unit of spreads and
  // group overrides, so any new digits is refused while held; a new tick_size of a forex symbol is taken)
  test('while accounts hold the symbol, any new digits is 409 SYMBOL_IN_USE; a new tick_size of a forex symbol is taken', async () => {
    const made = await t.request('POST', '/manager/symbols', { token: admin, body: forexSymbol('GRIDHELD') })
    expect(made.status).toBe(200)
    await ingest([
      { symbol: 'GRIDHELD', bid: 1.2, ask: 1.2002 },
      { symbol: 'EURUSD', bid: 1.1, ask: 1.1001 },
    ])
    const pos = await open('GRIDHELD')
    expect(pos.status).toBe(200)
    const fewer = await patchSymbol('GRIDHELD', { digits: 4, tick_size: 0.0001 })
    expect([fewer.status, fewer.json.error]).toEqual([409, 'SYMBOL_IN_USE'])
    expect(fewer.json.message).toMatch(/^digits: /)
    const more = await patchSymbol('GRIDHELD', { digits: 6 })
    expect([more.status, more.json.error]).toEqual([409, 'SYMBOL_IN_USE'])
    expect(more.json.message).toMatch(/^digits: /)
    expect(more.json.message).toMatch(/close or cancel them/)
    expect(await symbolRow('GRIDHELD')).toMatchObject({ digits: 5, tick_size: 0.00001 })
    // forex profit and margin do not read tick_size: taken while held, the position valued as before
    const tick = await patchSymbol('GRIDHELD', { tick_size: 0.00002 })
    expect([tick.status, tick.json.tick_size]).toEqual([200, 0.00002])
    await ingest([
      { symbol: 'GRIDHELD', bid: 1.20013, ask: 1.20033 },
      { symbol: 'EURUSD', bid: 1.1, ask: 1.1001 },
    ])
    const list = await t.request('GET', '/trade/list?login=100001', { token: user })
    const p = list.json.positions.find((x: any) => x.order === pos.json.order)
    // 0.10 lot long from 1.2002 at 1.20013: -0.00007 * 100000 * 0.1 = -0.7 USD
    expect([p.close_price, p.profit]).toEqual([1.20013, -0.7])
  })

  test('more digits while held leave open positions valued as before (a group spread override counts in points)', async () => {
    expect(
      (await t.request('POST', '/manager/symbols', { token: admin, body: forexSymbol('GRIDSPR') })).status,
    ).toBe(200)
    const g = await userGroupId()
    const ov = await t.request('PUT', `/manager/groups/${g}/symbols/GRIDSPR`, {
      token: manager,
      body: { spread: 20 },
    })
    expect(ov.status).toBe(200)
    const quotes = [
      { symbol: 'GRIDSPR', bid: 1.2, ask: 1.2002 },
      { symbol: 'EURUSD', bid: 1.1, ask: 1.1001 },
    ]
    await ingest(quotes)
    const pos = await t.request('POST', '/trade/open', {
      token: user,
      body: { login: 100001, cmd: 0, volume: 100, symbol: 'GRIDSPR', sl: 0, tp: 0 },
    })
    expect(pos.status).toBe(200)
    const before = (await t.request('GET', '/trade/list?login=100001', { token: user })).json.positions.find(
      (x: any) => x.order === pos.json.order,
    )
    // before the fix: 200, and the group spread of 20 points became 20 points of 10^-6: close price 1.2 went
    // to 1.20009 and the profit of the 1-lot long from -20 to -11, with no way to scale every brand's overrides
    const more = await patchSymbol('GRIDSPR', { digits: 6 })
    expect([more.status, more.json.error]).toEqual([409, 'SYMBOL_IN_USE'])
    expect(more.json.message).toMatch(/^digits: /)
    await ingest(quotes)
    const after = (await t.request('GET', '/trade/list?login=100001', { token: user })).json.positions.find(
      (x: any) => x.order === pos.json.order,
    )
    expect([after.close_price, after.profit]).toEqual([before.close_price, before.profit])
    expect((await symbolRow('GRIDSPR')).digits).toBe(5)
  })

  test('a futures symbol held: a new tick_value / tick_size ratio is 409 SYMBOL_IN_USE naming the field; the same ratio is taken', async () => {
    const made = await t.request('POST', '/manager/symbols', {
      token: admin,
      body: forexSymbol('GRIDFUT', { profit_mode: 2 }),
    })
    expect(made.status).toBe(200)
    await ingest([
      { symbol: 'GRIDFUT', bid: 1.2, ask: 1.2002 },
      { symbol: 'EURUSD', bid: 1.1, ask: 1.1001 },
    ])
    const pos = await open('GRIDFUT')
    expect(pos.status).toBe(200)
    const tick = await patchSymbol('GRIDFUT', { tick_size: 0.00002 })
    expect([tick.status, tick.json.error]).toEqual([409, 'SYMBOL_IN_USE'])
    expect(tick.json.message).toMatch(/^tick_size: /)
    expect(tick.json.message).toMatch(/close or cancel them/)
    const value = await patchSymbol('GRIDFUT', { tick_value: 2 })
    expect([value.status, value.json.error]).toEqual([409, 'SYMBOL_IN_USE'])
    expect(value.json.message).toMatch(/^tick_value: /)
    expect(await symbolRow('GRIDFUT')).toMatchObject({ tick_size: 0.00001, tick_value: 1 })
    // 2 per 0.00002 is 1 per 0.00001: profit per price move unchanged
    const same = await patchSymbol('GRIDFUT', { tick_size: 0.00002, tick_value: 2 })
    expect([same.status, same.json.tick_size, same.json.tick_value]).toEqual([200, 0.00002, 2])
    await ingest([
      { symbol: 'GRIDFUT', bid: 1.20013, ask: 1.20033 },
      { symbol: 'EURUSD', bid: 1.1, ask: 1.1001 },
    ])
    const list = await t.request('GET', '/trade/list?login=100001', { token: user })
    const p = list.json.positions.find((x: any) => x.order === pos.json.order)
    // 0.10 lot long from 1.2002 at 1.20013: -0.00007 / 0.00002 * 2 * 0.1 = -0.7 USD
    expect([p.close_price, p.profit]).toEqual([1.20013, -0.7])
  })

  test('a CFD-index symbol held: a new tick_size is 409 SYMBOL_IN_USE (margin per tick); contract_size is taken at once', async () => {
    const made = await t.request('POST', '/manager/symbols', {
      token: admin,
      body: forexSymbol('GRIDIDX', { margin_mode: 3, contract_size: 1, tick_value: 0.00001 }),
    })
    expect(made.status).toBe(200)
    await ingest([
      { symbol: 'GRIDIDX', bid: 1.2, ask: 1.2002 },
      { symbol: 'EURUSD', bid: 1.1, ask: 1.1001 },
    ])
    const pos = await open('GRIDIDX')
    expect(pos.status).toBe(200)
    const tick = await patchSymbol('GRIDIDX', { tick_size: 0.00002 })
    expect([tick.status, tick.json.error]).toEqual([409, 'SYMBOL_IN_USE'])
    expect(tick.json.message).toMatch(/^tick_size: /)
    expect((await symbolRow('GRIDIDX')).tick_size).toBe(0.00001)
    const contract = await patchSymbol('GRIDIDX', { contract_size: 2 })
    expect([contract.status, contract.json.contract_size]).toEqual([200, 2])
  })
})

describe('margin_divider bounds', () => {
  test('a near-zero margin_divider (1e-300) is refused 400 INVALID_DATA, or at least the holders of the group are not stopped out by it', async () => {
    await ingest([
      { symbol: 'EURUSD', bid: 1.1, ask: 1.1001 },
      { symbol: 'GBPUSD', bid: 1.3, ask: 1.3001 },
    ])
    const eur = await open('EURUSD')
    const gbp = await open('GBPUSD')
    expect([eur.status, gbp.status]).toEqual([200, 200])
    const g = await userGroupId()
    const put = await t.request('PUT', `/manager/groups/${g}/symbols/GBPUSD`, {
      token: manager,
      body: { margin_divider: 1e-300 },
    })
    clock.advance(1000)
    await ingest([
      { symbol: 'EURUSD', bid: 1.1002, ask: 1.1003 },
      { symbol: 'GBPUSD', bid: 1.3002, ask: 1.3003 },
    ])
    const hist = (await t.request('GET', '/trade/history?login=100001', { token: user })).json.rows as any[]
    const stoppedOut = hist.filter((r) => r.close_reason === 'stopout').map((r) => r.symbol)
    // before the fix: the override answered 200, GET /balance/me showed margin 1.3e302, and the next tick
    // stopped out both positions (close_reason stopout), the EURUSD one included
    expect({ refused: put.status === 400, stoppedOut }).toMatchObject(
      put.status === 400 ? { refused: true } : { stoppedOut: [] },
    )
    expect([put.status, put.json.error]).toEqual([400, 'INVALID_DATA'])
    expect(put.json.message).toMatch(/margin_divider/)
    expect(stoppedOut).toEqual([])
  })

  test('the group override and the symbol take 0.01 to 1e6, both ends included', async () => {
    const g = await userGroupId()
    const put = (margin_divider: number) =>
      t.request('PUT', `/manager/groups/${g}/symbols/USDJPY`, { token: manager, body: { margin_divider } })
    for (const bad of [0.009, 0, 1e6 + 1]) {
      const r = await put(bad)
      expect([bad, r.status, r.json.error]).toEqual([bad, 400, 'INVALID_DATA'])
      expect(r.json.message).toMatch(/margin_divider/)
    }
    expect((await put(0.01)).json.margin_divider).toBe(0.01)
    expect((await put(1e6)).json.margin_divider).toBe(1e6)
    for (const bad of [0.001, 1e-300]) {
      const r = await patchSymbol('USDJPY', { margin_divider: bad })
      expect([bad, r.status, r.json.error]).toEqual([bad, 400, 'INVALID_DATA'])
      expect(r.json.message).toMatch(/margin_divider/)
      const c = await t.request('POST', '/manager/symbols', {
        token: admin,
        body: forexSymbol('DIVBAD', { margin_divider: bad }),
      })
      expect([bad, c.status, c.json.error]).toEqual([bad, 400, 'INVALID_DATA'])
      expect(c.json.message).toMatch(/margin_divider/)
    }
    expect((await patchSymbol('USDJPY', { margin_divider: 0.01 })).json.margin_divider).toBe(0.01)
  })
})
