// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { ManualClock } from '../../src/kernel/clock'
import { makeTestApp, type TestApp } from '../support/app'
import { quoteIngest } from '../support/quotes'
import { allDay, forexSymbol } from '../support/symbols'

// The staff probe's market findings: hiding a security group accounts hold positions in, symbol
// currencies nothing converts, a sec_group no security route can address. One app per describe.

const START = Date.UTC(2026, 0, 5, 12, 0, 0)

describe('PUT /manager/groups/:id/securities/:sec_group with open positions', () => {
  const clock = new ManualClock(START)
  let t: TestApp
  let user: string
  let manager: string
  let dealer: string
  const ingest = quoteIngest(
    () => t,
    clock,
    () => dealer,
  )
  beforeAll(async () => {
    t = await makeTestApp({ clock })
    manager = await t.staffToken(1, 'manager-pass-1')
    dealer = await t.staffToken(3, 'dealer-pass-1')
    user = await t.userToken()
  })
  afterAll(() => t.close())

  const put = (groupId: number, body: Record<string, unknown>) =>
    t.request('PUT', `/manager/groups/${groupId}/securities/Forex`, { token: manager, body })

  test('hiding (show 0, trade 0) a security group the accounts of the group hold positions in is refused 409 GROUP_LACKS_SYMBOLS, and the customer can still close', async () => {
    await ingest([{ symbol: 'EURUSD', bid: 1.1, ask: 1.1001 }])
    const pos = await t.request('POST', '/trade/open', {
      token: user,
      body: { login: 100001, cmd: 0, volume: 10, symbol: 'EURUSD', sl: 0, tp: 0 },
    })
    expect(pos.status).toBe(200)
    const acct = (await t.request('GET', '/manager/accounts/100001', { token: manager })).json
    const groups = (await t.request('GET', '/manager/groups', { token: manager })).json.rows as any[]
    const g = groups.find((x) => x.name === acct.group)
    const current = (
      await t.request('GET', `/manager/groups/${g.id}/trading`, { token: manager })
    ).json.securities.find((s: { sec_group: string }) => s.sec_group === 'Forex')
    const hide = await put(g.id, { show: 0, trade: 0, lot_min: 1, lot_max: 10000, lot_step: 1 })
    // trading refuses a close where the group's trade is 0 as well: not tradable alone is refused too
    const noTrade = await put(g.id, { ...current, sec_group: undefined, trade: 0 })
    expect(noTrade.status).toBe(409)
    expect(noTrade.json.error).toBe('GROUP_LACKS_SYMBOLS')
    expect(noTrade.json.message).toContain('EURUSD')
    // other settings still change while the positions are open
    const commission = await put(g.id, { ...current, sec_group: undefined, comm_base: current.comm_base + 1 })
    expect(commission.status).toBe(200)
    expect(commission.json).toMatchObject({ show: 1, trade: 1 })
    const close = await t.request('DELETE', '/trade/close', { token: user, body: { order: pos.json.order } })
    // before the fix: 200 for the hide, then the close answered 500 TRADE_ERROR "symbol EURUSD is not
    // available for group real\USD": the customer could not leave the position; only a stop-out ended it
    expect({ hide: hide.status, code: hide.json?.error, close: close.status }).toEqual({
      hide: 409,
      code: 'GROUP_LACKS_SYMBOLS',
      close: 200,
    })
    // nothing held any more: hiding is taken
    const later = await put(g.id, { ...current, sec_group: undefined, show: 0, trade: 0 })
    expect(later.status).toBe(200)
    expect(later.json).toMatchObject({ show: 0, trade: 0 })
    expect((await put(g.id, { ...current, sec_group: undefined })).status).toBe(200)
  })
})

describe('PATCH /manager/symbols/:symbol currencies', () => {
  const clock = new ManualClock(START)
  let t: TestApp
  let user: string
  let admin: string
  let dealer: string
  const ingest = quoteIngest(
    () => t,
    clock,
    () => dealer,
  )
  beforeAll(async () => {
    t = await makeTestApp({ clock })
    admin = await t.staffToken(2, 'admin-pass-1')
    dealer = await t.staffToken(3, 'dealer-pass-1')
    user = await t.userToken()
  })
  afterAll(() => t.close())

  test('a margin_currency / quote_currency no price converts is refused (400 INVALID_DATA or 409) while accounts hold the symbol; they keep signing in and closing', async () => {
    await ingest([{ symbol: 'EURUSD', bid: 1.1, ask: 1.1001 }])
    const pos = await t.request('POST', '/trade/open', {
      token: user,
      body: { login: 100001, cmd: 0, volume: 10, symbol: 'EURUSD', sl: 0, tp: 0 },
    })
    expect(pos.status).toBe(200)
    const patch = await t.request('PATCH', '/manager/symbols/EURUSD', {
      token: admin,
      body: { margin_currency: 'ZZZ', quote_currency: 'QQQ' },
    })
    expect(patch.json.error).toBe('INVALID_DATA')
    expect(patch.json.message).toContain('margin_currency')
    // a currency a symbol name pairs (EURPLN brings PLN) but nothing converts into the holders' USD
    const pln = await t.request('POST', '/manager/symbols', { token: admin, body: forexSymbol('EURPLN') })
    expect(pln.status).toBe(200)
    const quote = await t.request('PATCH', '/manager/symbols/EURUSD', {
      token: admin,
      body: { quote_currency: 'PLN' },
    })
    expect(quote.status).toBe(409)
    expect(quote.json.error).toBe('CURRENCY_NOT_CONVERTIBLE')
    expect(quote.json.message).toContain('quote_currency')
    // a currency that converts is taken (the margin currency of a forex pair in GBP)
    const gbp = await t.request('PATCH', '/manager/symbols/EURUSD', {
      token: admin,
      body: { margin_currency: 'GBP' },
    })
    expect(gbp.status).toBe(200)
    expect(
      (
        await t.request('PATCH', '/manager/symbols/EURUSD', {
          token: admin,
          body: { margin_currency: 'EUR' },
        })
      ).status,
    ).toBe(200)
    await ingest([{ symbol: 'EURUSD', bid: 1.1002, ask: 1.1003 }])
    const signIn = await t.request('POST', '/sign/in', { body: { login: 100001, password: 'demo-pass-1' } })
    const close = await t.request('DELETE', '/trade/close', { token: user, body: { order: pos.json.order } })
    // before the fix: the patch answered 200; then sign-in answered 400 INVALID_MARGIN_LEVEL and the close
    // 500 TRADE_ERROR "no conversion rate for EURUSD into USD": the account was locked out with its position
    expect({
      refused: [400, 409].includes(patch.status),
      signIn: signIn.status,
      close: close.status,
    }).toEqual({
      refused: true,
      signIn: 200,
      close: 200,
    })
  })

  test('a new symbol with a currency the reference data does not know is 400 INVALID_DATA naming the field', async () => {
    const res = await t.request('POST', '/manager/symbols', {
      token: admin,
      body: forexSymbol('EURXYZ1', { quote_currency: 'QQQ' }),
    })
    expect(res.status).toBe(400)
    expect(res.json.error).toBe('INVALID_DATA')
    expect(res.json.message).toContain('quote_currency')
  })
})

describe('POST /manager/symbols sec_group', () => {
  let t: TestApp
  let admin: string
  beforeAll(async () => {
    t = await makeTestApp()
    admin = await t.staffToken(2, 'admin-pass-1')
  })
  afterAll(() => t.close())

  test('a sec_group the securities route refuses (here with a dot) is 400 INVALID_DATA naming sec_group, not a symbol no group can ever be given', async () => {
    const create = await t.request('POST', '/manager/symbols', {
      token: admin,
      body: {
        symbol: 'EURPLN',
        description: 'Euro vs Zloty',
        currency: 'EUR',
        margin_currency: 'EUR',
        quote_currency: 'PLN',
        sec_group: 'Forex.Minor',
        digits: 5,
        tick_size: 0.00001,
        tick_value: 1,
        contract_size: 100000,
        sessions: allDay,
        sim_price: 4.3,
        sim_volatility: 0.08,
      },
    })
    // before the fix: 200, and PUT /manager/groups/{id}/securities/Forex.Minor answered 400 (path pattern
    // ^[A-Za-z0-9 _-]+$): the symbol could never be shown or traded by any group
    expect(create.status).toBe(400)
    expect(create.json.error).toBe('INVALID_DATA')
    expect(create.json.message).toContain('sec_group')
    const patch = await t.request('PATCH', '/manager/symbols/EURUSD', {
      token: admin,
      body: { sec_group: 'Forex.Minor' },
    })
    expect(patch.status).toBe(400)
    expect(patch.json.message).toContain('sec_group')
  })
})
