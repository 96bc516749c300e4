// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { ManualClock } from '../../src/kernel/clock'
import { makeTestApp, type TestApp } from '../support/app'
import { quoteIngest } from '../support/quotes'

/**
 * A finding of the second hostile probe of the staff routes (.tmp/probe-staff): a group's new margin call
 * and stop-out levels reached no account until the once-a-minute sweep (the engine's price bands were
 * built from the old levels, and a group change told the engine nothing).
 */

const clock = new ManualClock(Date.UTC(2026, 0, 5, 12, 0, 0))
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

describe('PATCH /manager/groups/:id margin_call / stop_out', () => {
  test('raised above an account’s margin level: the next tick stops it out (as an account change would be looked at)', async () => {
    await ingest([{ symbol: 'EURUSD', bid: 1.1, ask: 1.1001 }])
    // 6 lots at 1:100 need about 6,600 USD of margin on 10,000: a margin level near 150 %
    const pos = await t.request('POST', '/trade/open', {
      token: user,
      body: { login: 100001, cmd: 0, volume: 600, symbol: 'EURUSD', sl: 0, tp: 0 },
    })
    expect(pos.status).toBe(200)
    await ingest([{ symbol: 'EURUSD', bid: 1.1, ask: 1.1001 }])
    const before = (await t.request('GET', '/account/me', { token: user })).json
    expect(before.margin_level).toBeGreaterThan(140)
    expect(before.margin_level).toBeLessThan(160)
    const acct = (await t.request('GET', '/manager/accounts/100001', { token: manager })).json
    const g = ((await t.request('GET', '/manager/groups', { token: manager })).json.rows as any[]).find(
      (x) => x.name === acct.group,
    )
    const patch = await t.request('PATCH', `/manager/groups/${g.id}`, {
      token: manager,
      body: { margin_call: 300, stop_out: 200 },
    })
    expect(patch.status).toBe(200)
    // the price barely moves: the account is now far below the group's stop-out level
    await ingest([{ symbol: 'EURUSD', bid: 1.10001, ask: 1.10011 }])
    await ingest([{ symbol: 'EURUSD', bid: 1.1, ask: 1.1001 }])
    await t.settle()
    const list = (await t.request('GET', '/trade/list?login=100001', { token: user })).json
    const me = (await t.request('GET', '/account/me', { token: user })).json
    expect({
      open: list.positions.map((p: any) => p.order),
      margin_level_at_or_above_stop_out: me.margin === 0 || me.margin_level > 200,
    }).toEqual({ open: [], margin_level_at_or_above_stop_out: true })
  })
})
