// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { SQLiteSyncDialect } from 'drizzle-orm/sqlite-core'
import { ManualClock } from '../../src/kernel/clock'
import type { Queryable } from '../../src/kernel/db/client'
import { AccountsPort } from '../../src/modules/accounts'
import { heldByGroup } from '../../src/modules/trading/book/group-fit'
import { orders } from '../../src/modules/trading/schema'
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

  test('a margin_mode change refused for a currency the holders cannot convert names margin_mode, the field that changed', async () => {
    await ingest([{ symbol: 'EURUSD', bid: 1.1, ask: 1.1001 }])
    // CFD leverage (margin_mode 4): margin and profit in the quote currency USD; the margin currency PLN
    // (EURPLN's) is used by forex mode only, and nothing converts PLN into USD
    const pln = await t.request('POST', '/manager/symbols', { token: admin, body: forexSymbol('EURPLN') })
    expect(pln.status === 200 || pln.json.error === 'SYMBOL_EXISTS').toBe(true)
    const create = await t.request('POST', '/manager/symbols', {
      token: admin,
      body: forexSymbol('PLNCFD', { margin_mode: 4, margin_currency: 'PLN', currency: 'PLN' }),
    })
    expect(create.status).toBe(200)
    await ingest([{ symbol: 'PLNCFD', bid: 1.2, ask: 1.2001 }])
    const pos = await t.request('POST', '/trade/open', {
      token: user,
      body: { login: 100001, cmd: 0, volume: 10, symbol: 'PLNCFD', sl: 0, tp: 0 },
    })
    expect(pos.status).toBe(200)
    const mode = await t.request('PATCH', '/manager/symbols/PLNCFD', {
      token: admin,
      body: { margin_mode: 0 },
    })
    expect(mode.status).toBe(409)
    expect(mode.json.error).toBe('CURRENCY_NOT_CONVERTIBLE')
    // before the fix: "margin_currency: no pair converts PLN into USD ...", a field the request did not send
    expect(mode.json.message).toMatch(/^margin_mode: /)
    expect(mode.json.message).toContain('PLN')
    const close = await t.request('DELETE', '/trade/close', { token: user, body: { order: pos.json.order } })
    expect(close.status).toBe(200)
    // nothing held: the mode changes
    expect(
      (await t.request('PATCH', '/manager/symbols/PLNCFD', { token: admin, body: { margin_mode: 0 } }))
        .status,
    ).toBe(200)
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

describe("PUT /manager/groups/:id/securities/:sec_group: the holders check is the group's, bounded, and only when it hides", () => {
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
  const groupId = async (name: string) =>
    ((await t.request('GET', '/manager/groups', { token: manager })).json.rows as any[]).find(
      (g) => g.name === name,
    ).id as number
  const forex = async (id: number) =>
    (await t.request('GET', `/manager/groups/${id}/trading`, { token: manager })).json.securities.find(
      (s: { sec_group: string }) => s.sec_group === 'Forex',
    )

  test("another group's holders do not stop hiding it; re-saving settings already hidden is taken while the group holds orders there", async () => {
    await ingest([{ symbol: 'EURUSD', bid: 1.1, ask: 1.1001 }])
    const pos = await t.request('POST', '/trade/open', {
      token: user,
      body: { login: 100001, cmd: 0, volume: 10, symbol: 'EURUSD', sl: 0, tp: 0 },
    })
    expect(pos.status).toBe(200)
    const realUsd = await groupId('real\\USD')
    const realEur = await groupId('real\\EUR')
    const usd = await forex(realUsd)
    const eur = await forex(realEur)
    // real\USD holds EURUSD: refused, naming it; real\EUR holds nothing: hidden
    const held = await put(realUsd, { ...usd, sec_group: undefined, show: 0 })
    expect([held.status, held.json.error]).toEqual([409, 'GROUP_LACKS_SYMBOLS'])
    expect(held.json.message).toMatch(/^show: .*EURUSD/)
    const hidden = await put(realEur, { ...eur, sec_group: undefined, show: 0, trade: 0 })
    expect(hidden.status).toBe(200)
    // a pending order of real\EUR's account left in EURUSD while it was hidden (written as an older
    // version could): re-saving the hidden settings (a commission) changes nothing it could close before
    await t.ctx.db.insert(orders).values({
      brandId: 1,
      login: 100003,
      symbol: 'EURUSD',
      cmd: 2,
      volume: 10,
      state: 'pending',
      openPrice: 1.05,
      openTime: clock.now(),
      updatedAt: clock.now(),
    })
    const resave = await put(realEur, { ...eur, sec_group: undefined, show: 0, trade: 0, comm_base: 3 })
    // before the fix: 409 GROUP_LACKS_SYMBOLS, the check ran whenever show or trade was 0
    expect(resave.status).toBe(200)
    expect(resave.json).toMatchObject({ show: 0, trade: 0, comm_base: 3 })
    // shown again, then hidden: the pending order is held, refused naming trade
    expect((await put(realEur, { ...eur, sec_group: undefined })).status).toBe(200)
    const stop = await put(realEur, { ...eur, sec_group: undefined, trade: 0 })
    expect([stop.status, stop.json.error]).toEqual([409, 'GROUP_LACKS_SYMBOLS'])
    expect(stop.json.message).toMatch(/^trade: .*EURUSD/)
    expect(
      (await t.request('DELETE', '/trade/close', { token: user, body: { order: pos.json.order } })).status,
    ).toBe(200)
    expect((await put(realUsd, { ...usd, sec_group: undefined, show: 0 })).status).toBe(200)
    expect((await put(realUsd, { ...usd, sec_group: undefined })).status).toBe(200)
  })

  test("the check reads the group's logins through the accounts port by index, then only their open and pending orders, not every order", async () => {
    const statements: { sql: string; params: unknown[] }[] = []
    const q = {
      // the accounts port's read (jsonRows-style: one JSON text)
      execute: async (stmt: { sql: string; args: unknown[] }) => {
        statements.push({ sql: stmt.sql, params: stmt.args })
        return { rows: [{ rows: '[100001,100002]' }] }
      },
      all: async (query: Parameters<Queryable['all']>[0]) => {
        statements.push(new SQLiteSyncDialect().sqlToQuery(query as never))
        return []
      },
    } as unknown as Queryable
    await heldByGroup({ accounts: t.ports.get(AccountsPort) }, q, 1, 2, ['EURUSD', 'GBPUSD'])
    expect(statements).toHaveLength(2)
    const [logins, held] = statements as [(typeof statements)[0], (typeof statements)[0]]
    // trading reads no table of the accounts module: the logins come from its port, within `q`
    expect(held.sql).not.toMatch(/\baccounts\b/)
    expect(logins.params).toEqual([1, 2])
    expect(held.params[0]).toBe('[100001,100002]')
    // in a transaction: an EXPLAIN on the local adapter's reader connection leaves it on a stale snapshot
    const plans = await t.ctx.db.transaction(async (tx) => {
      const out: string[] = []
      for (const { sql, params } of statements)
        out.push(
          (await tx.execute({ sql: `explain query plan ${sql}`, args: params as never })).rows
            .map((r) => String(r.detail))
            .join(' | '),
        )
      return out
    })
    expect(plans[0]).toMatch(
      /SEARCH accounts USING (COVERING )?INDEX accounts_brand_group \(brand_id=\? AND group_id=\?\)/,
    )
    expect(plans[1]).toMatch(
      /SEARCH orders USING (COVERING )?INDEX orders_login_state \(login=\? AND state=\?\)/,
    )
    for (const plan of plans) expect(plan).not.toMatch(/SCAN (orders|accounts)\b/)
  })
})
