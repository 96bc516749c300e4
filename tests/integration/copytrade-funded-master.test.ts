// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
// A funded prop account (the firm's capital) is neither a copy master's payout account nor a master
// (probe .tmp/probe-propkyc/funded-capital.test.ts): copy rewards paid into it would prop up its equity
// against its loss limits and be paid out as profit through the prop split.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { ManualClock } from '../../src/kernel/clock'
import { makeTestApp, type TestApp } from '../support/app'
import { buyChallenge } from '../support/prop'

const clock = new ManualClock(Date.UTC(2026, 10, 23, 9, 0, 0))
let t: TestApp
let customer: string
let manager: string
let dealer: string

const px = (x: number) => Math.round(x * 100_000) / 100_000
async function ingest(ticks: { symbol: string; bid: number; ask: number }[]) {
  clock.advance(1000)
  const r = await t.request('POST', '/market/quotes', { token: dealer, body: { ticks } })
  expect(r.status).toBe(200)
}

async function profitAndClose(login: number, token: string, pips = 0.003, volume = 100) {
  const o = await t.request('POST', '/trade/open', {
    token,
    body: { login, cmd: 0, volume, symbol: 'EURUSD', sl: 0, tp: 0 },
  })
  expect([o.status, o.json.error, o.json.message]).toEqual([200, undefined, undefined])
  const ask = o.json.trade.open_price as number
  await ingest([{ symbol: 'EURUSD', bid: px(ask + pips), ask: px(ask + pips + 0.0002) }])
  const closed = await t.request('DELETE', '/trade/close', { token, body: { order: o.json.order } })
  expect(closed.status).toBe(200)
}

/** One evaluation phase, then a funded one. */
const quickProgram = () => {
  const rules = { profit_target_pct: 1, daily_loss_pct: 5, total_loss_pct: 10, min_trading_days: 1 }
  return {
    name: `Quick ${Math.random()}`,
    price: 10,
    currency: 'USD',
    active: true,
    time_zone: 'Europe/Prague',
    steps: [
      { account_group: 'prop\\eval\\USD', phase_type: 0, rules },
      {
        account_group: 'prop\\funded\\USD',
        phase_type: 1,
        profit_split: 0.8,
        rules: { ...rules, profit_target_pct: 0, min_trading_days: 0 },
      },
    ],
  }
}

beforeAll(async () => {
  t = await makeTestApp({ clock })
  customer = await t.customerToken()
  manager = await t.staffToken()
  dealer = await t.staffToken(3, 'dealer-pass-1')
  await ingest([{ symbol: 'EURUSD', bid: 1.1, ask: 1.1002 }])
})
afterAll(() => t.close())

async function reachFunded() {
  const created = await t.request('POST', '/manager/prop/programs', { token: manager, body: quickProgram() })
  expect(created.status).toBe(200)
  const c = await buyChallenge(t, customer, created.json.id)
  await t.runJob('prop.evaluate')
  await profitAndClose(c.login, c.token)
  await t.runJob('prop.evaluate')
  const d = (await t.request('GET', `/prop/challenges/${c.challenge}`, { token: customer })).json
  expect(d.current_phase.phase_type).toBe(1)
  return { challenge: c.challenge, login: d.current_phase.account_login as number }
}

test("a funded prop account (the firm's capital) cannot be a copy master's payout account", async () => {
  const f = await reachFunded()
  const r = await t.request('POST', '/copytrade/master', {
    token: customer,
    body: { name: 'X', login: 100001, payout_login: f.login, reward_policy: { reward_type: 3, percent: 10 } },
  })
  expect([r.status, r.json.error]).toEqual([400, 'INVALID_PAYOUT_ACCOUNT'])
  // nor made one later
  const m = await t.request('POST', '/copytrade/master', {
    token: customer,
    body: { name: 'X2', login: 100001, reward_policy: { reward_type: 3, percent: 10 } },
  })
  expect(m.status).toBe(200)
  const u = await t.request('PUT', `/copytrade/master/${m.json.id}`, {
    token: customer,
    body: { payout_login: f.login },
  })
  expect([u.status, u.json.error]).toEqual([400, 'INVALID_PAYOUT_ACCOUNT'])
})

test('a funded prop account cannot be a copy master receiving rewards into itself (payout_login defaulting to it)', async () => {
  const f = await reachFunded()
  const r = await t.request('POST', '/copytrade/master', {
    token: customer,
    body: { name: 'Y', login: f.login, reward_policy: { reward_type: 3, percent: 10 } },
  })
  expect(r.status).toBeGreaterThanOrEqual(400)
  expect(r.json.error).toBe('INVALID_ACCOUNT')
})
