// Copy trading's executed rewards beyond the spec's list (issue 31): PERFORMANCE_FEE_HWM with its mark
// moved by deposits and withdrawals, MANAGEMENT_FEE accrued daily, SUBSCRIPTION_FEE per period,
// VOLUME_REBATE per lot, the fee preview, and the equity stop. Time is moved, never slept.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { balanceOperations } from '../../src/modules/accounts/schema'
import { copyRewards, copySubscriptions } from '../../src/modules/copytrade/schema'
import type { TestApp } from '../support/app'
import { copyFeeWorld, DAY } from '../support/copy-fees'

let w: Awaited<ReturnType<typeof copyFeeWorld>>
let t: TestApp

beforeAll(async () => {
  w = await copyFeeWorld()
  t = w.t
})
afterAll(() => t.close())

test('PERFORMANCE_FEE_HWM: the period end charges 20 % of the copy equity above the mark, in the follower currency', async () => {
  const m = await w.master(await w.newAccount(20_000), { reward_type: 1, percent: 20, period_days: 30 })
  const mLogin = (await t.request('GET', `/copytrade/master/mine`, { token: w.s.demo })).json.rows.find(
    (x: { id: number }) => x.id === m,
  ).login
  // the follower holds EUR: the copy equity and the fee are in EUR
  const sub = await w.follow(100003, m, { volume_mode: 1, volume_param: 0.5 })
  await w.openTrade(mLogin, 0, 100)
  await t.settle()
  await w.price(1.12)
  const p = await w.preview(sub)
  expect(p).toMatchObject({ currency: 'EUR', copy_capital: 5000, high_water_mark: 5000, open_copies: 1 })
  // 0.5 lot bought at 1.1002, bid 1.12: 50,000 x 0.0198 = 990 USD, in EUR at 1 / 1.1202
  // (the EUR group's own quote and commission move it by a little)
  expect(Math.abs(p.floating - 990 / 1.1202)).toBeLessThan(5)
  expect(p.performance_fee_now).toBeCloseTo(Math.floor(p.floating * 20) / 100, 2)
  // not yet due
  await t.runJob('copytrade.settle')
  expect(await w.rewardsOf(sub)).toHaveLength(0)
  await w.advance(30 * DAY + 60_000)
  await t.runJob('copytrade.settle')
  const [fee] = await w.rewardsOf(sub)
  expect(fee).toMatchObject({ reward_name: 'PERFORMANCE_FEE_HWM', status: 'settled' })
  expect(fee!.amount).toBeCloseTo(p.performance_fee_now, 2)
  const after = await w.preview(sub)
  // the mark moved to the equity after the fee; nothing more is due at this price
  expect(after.performance_fee_now).toBe(0)
  expect(after.high_water_mark).toBeCloseTo(after.copy_equity, 2)
  // a withdrawal of a fifth of the equity takes a fifth of the mark
  const out = Math.round(after.copy_equity * 20) / 100
  await w.post('/manager/accounts/100003/balance', { type: 'withdrawal', amount: out }, w.s.staff)
  await t.settle()
  const taken = await w.preview(sub)
  expect(taken.copy_capital).toBeCloseTo(5000 - out, 2)
  expect(taken.high_water_mark).toBeCloseTo(after.high_water_mark * 0.8, 1)
  // a deposit raises the mark by its amount
  await w.post('/manager/accounts/100003/balance', { type: 'deposit', amount: 1000 }, w.s.staff)
  await t.settle()
  expect((await w.preview(sub)).high_water_mark).toBeCloseTo(taken.high_water_mark + 1000, 2)
  // the end of the subscription charges what is due then: the price rose again
  await w.price(1.14)
  const due = (await w.preview(sub)).performance_fee_now
  expect(due).toBeGreaterThan(0)
  await w.post(`/copytrade/subscription/${sub}/disable`, {})
  await t.settle()
  const rows = await w.rewardsOf(sub)
  expect(rows).toHaveLength(2)
  expect(rows[0]!.amount).toBeCloseTo(due, 2)
  // every accrual settled with its two operations carrying its id
  for (const r of rows) {
    const ops = (await t.ctx.db.select().from(balanceOperations)).filter(
      (o) => o.apiData && JSON.parse(o.apiData).copy_reward_accrual_id === r.id,
    )
    expect(ops.map((o) => o.op).sort()).toEqual(['OP_BALANCE_IN', 'OP_BALANCE_OUT'])
  }
})

test('a deposit or withdrawal moves a subscription by its share of the balance: out and back in leaves its mark where it was', async () => {
  // a hostile client's probe: each subscription took the whole of every flow, so 5,000 out took its
  // capital to -4,000 and its mark to 0, and 5,000 back in raised both: the mark 1,000 -> 5,000, and
  // the gains up to it were never charged
  const m = await w.master(await w.newAccount(20_000), { reward_type: 1, percent: 20, period_days: 30 })
  const follower = await w.newAccount(10_000)
  const sub = await w.follow(follower, m, { capital: 1000 })
  expect(await w.preview(sub)).toMatchObject({ copy_capital: 1000, high_water_mark: 1000 })
  await w.post(`/manager/accounts/${follower}/balance`, { type: 'withdrawal', amount: 5000 }, w.s.staff)
  await t.settle()
  // a tenth of the balance: a tenth of the flow
  expect(await w.preview(sub)).toMatchObject({ copy_capital: 500, high_water_mark: 500 })
  await w.post(`/manager/accounts/${follower}/balance`, { type: 'deposit', amount: 5000 }, w.s.staff)
  await t.settle()
  expect(await w.preview(sub)).toMatchObject({ copy_capital: 1000, high_water_mark: 1000 })
  // all of the balance out: the subscription gives up what it manages, no more
  await w.post(`/manager/accounts/${follower}/balance`, { type: 'withdrawal', amount: 10_000 }, w.s.staff)
  await t.settle()
  expect(await w.preview(sub)).toMatchObject({ copy_capital: 0, high_water_mark: 0 })
  await w.post(`/copytrade/subscription/${sub}/disable`, {})
  await t.settle()
})

test('MANAGEMENT_FEE accrues daily on the copy equity; SUBSCRIPTION_FEE once per period; VOLUME_REBATE per lot copied', async () => {
  const mgmt = await w.master(await w.newAccount(10_000), { reward_type: 4, annual_percent: 2 })
  const fixed = await w.master(await w.newAccount(10_000), { reward_type: 0, amount: 30, period_days: 30 })
  const rebateLogin = await w.newAccount(10_000)
  const rebate = await w.master(rebateLogin, { reward_type: 2, per_lot: 5 })
  const f = await w.newAccount(5_000)
  const mFollower = await w.newAccount(10_000)
  // the deposits are flows before the subscriptions start (the test's clock stands still)
  await t.settle()
  const subM = await w.follow(mFollower, mgmt)
  // the demo account 100002 follows the same REAL master: demo money never becomes real, it owes nothing
  const subDemo = await w.follow(100002, mgmt)
  // one account, two masters: each manages its share of the balance (the balance cannot be allocated twice)
  const subF = await w.follow(f, fixed, { capital: 2_500 })
  const subR = await w.follow(f, rebate, { capital: 2_500 })
  // the first period's fee is due at once; a second run accrues nothing more
  await t.runJob('copytrade.settle')
  await t.runJob('copytrade.settle')
  expect((await w.rewardsOf(subF)).map((r) => [r.reward_name, r.amount, r.status])).toEqual([
    ['SUBSCRIPTION_FEE', 30, 'settled'],
  ])
  await w.advance(2 * DAY)
  await t.runJob('copytrade.settle')
  // 2 % a year on 10,000.00 for 2 days = floor(1,000,000 x 2 x 2 / 100 / 365) = 109 cents
  expect((await w.rewardsOf(subM)).map((r) => [r.reward_name, r.amount])).toEqual([['MANAGEMENT_FEE', 1.09]])
  expect(await w.rewardsOf(subDemo)).toEqual([])
  await w.advance(28 * DAY)
  await t.runJob('copytrade.settle')
  expect((await w.rewardsOf(subF)).map((r) => r.amount)).toEqual([30, 30])
  // 0.50 lots copied x 5 USD = 2.50
  await w.openTrade(rebateLogin, 0, 50)
  await t.settle()
  expect((await w.rewardsOf(subR)).map((r) => [r.reward_name, r.amount, r.status])).toEqual([
    ['VOLUME_REBATE', 2.5, 'settled'],
  ])
  // accrued = settled + pending, for every subscription
  const all = await t.ctx.db.select().from(copyRewards)
  const subs = await t.ctx.db.select().from(copySubscriptions)
  for (const s of subs) {
    const settled = all
      .filter((r) => r.subscriptionId === s.id && r.status === 'settled')
      .reduce((a, r) => a + r.amountMinor, 0)
    expect(s.feesMinor).toBe(settled)
  }
})

test("a fee waits while paying it would eat into the follower's free margin, and is paid once the margin is free", async () => {
  const fixed = await w.master(await w.newAccount(10_000), { reward_type: 0, amount: 30, period_days: 30 })
  const f = await w.newAccount(100)
  const opened = await w.openTrade(f, 0, 8)
  const me = async () =>
    (await t.request('GET', `/account/me?login=${f}`, { token: await w.tradeToken(f) })).json as {
      balance: number
      margin_free: number
    }
  expect((await me()).margin_free).toBeLessThan(30)
  const sub = await w.follow(f, fixed)
  await t.runJob('copytrade.settle')
  // owed, not taken: taking it would leave the position's margin uncovered
  expect((await w.rewardsOf(sub)).map((r) => [r.reward_name, r.amount, r.status])).toEqual([
    ['SUBSCRIPTION_FEE', 30, 'pending'],
  ])
  expect((await me()).balance).toBe(100)
  const closed = await t.request('DELETE', '/trade/close', {
    token: await w.tradeToken(f),
    body: { order: opened.order },
  })
  expect(closed.status).toBe(200)
  await t.settle()
  const freed = await me()
  await t.runJob('copytrade.settle')
  expect((await w.rewardsOf(sub)).map((r) => r.status)).toEqual(['settled'])
  expect((await me()).balance).toBeCloseTo(freed.balance - 30, 2)
  await w.post(`/copytrade/subscription/${sub}/disable`, {})
  await t.settle()
})

test('the equity stop closes the copies and pauses the subscription with a stop record', async () => {
  const mLogin = await w.newAccount(10_000)
  const m = await w.master(mLogin, { reward_type: 3, percent: 10 })
  const f = await w.newAccount(10_000)
  const sub = await w.follow(f, m, { volume_mode: 1, volume_param: 1, equity_stop: 1, equity_stop_type: 1 })
  await w.price(1.1)
  await w.openTrade(mLogin, 0, 100)
  await t.settle()
  await t.runJob('copytrade.equity-stops')
  expect(
    (await t.request('GET', `/copytrade/subscription/${sub}`, { token: w.s.demo })).json.status_name,
  ).toBe('ACTIVE')
  // 1 lot, 0.0120 down: -1,200 on a capital of 10,000 is more than 1 %
  await w.price(1.088)
  await t.runJob('copytrade.equity-stops')
  await t.settle()
  const s = (await t.request('GET', `/copytrade/subscription/${sub}`, { token: w.s.demo })).json
  expect([s.status_name, s.status_reason]).toEqual(['PAUSED', 'EQUITY_STOP'])
  const open = (await t.request('GET', `/trade/list?login=${f}`, { token: await w.tradeToken(f) })).json
  expect(open.positions).toHaveLength(0)
  const stop = (await t.request('GET', `/copytrade/subscription/${sub}/copies`, { token: w.s.demo })).json
    .rows
  expect(stop.map((r: { action: string; reason: string }) => [r.action, r.reason])).toContainEqual([
    'stop',
    'EQUITY_STOP',
  ])
})
