// What a hostile probe of copy trading's money found (issue 43's twenty-third session): a performance fee
// whose payment waited was charged a fee again (and at the rate of terms accepted later), a profit share
// was taken on a position its master had let go of, and a subscription period already paid was charged
// again after a pause. Time is moved, never slept.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq, sql } from 'drizzle-orm'
import { copyLinks } from '../../src/modules/copytrade/schema'
import { copyFeeWorld, DAY } from '../support/copy-fees'

let w: Awaited<ReturnType<typeof copyFeeWorld>>
beforeAll(async () => {
  w = await copyFeeWorld()
})
afterAll(() => w?.t.close())

const HWM_20 = { reward_type: 1, percent: 20, period_days: 30 }
const settled = (rows: { status: string; amount: number }[]) =>
  Math.round(rows.filter((r) => r.status === 'settled').reduce((a, r) => a + r.amount, 0) * 100) / 100

/** Two masters charging a management fee, and a follower account of 10,000 USD following nobody yet. */
async function twoMastersAndAFollower() {
  const mgmt = { reward_type: 4, annual_percent: 10 }
  const a = await w.master(await w.newAccount(20_000), mgmt)
  const b = await w.master(await w.newAccount(20_000), mgmt)
  const f = await w.newAccount(10_000)
  await w.t.settle()
  await w.request('POST', '/copytrade/follower', { login: f })
  return { mgmt, a, b, f, subscribe: subscriber(f) }
}

/** Subscribes `follower` to a master on its current terms, with a capital or the default. */
const subscriber = (follower: number) => async (master: number, capital?: number) => {
  const { policy_version } = (await w.request('GET', `/copytrade/masters/${master}`)).json
  return w.request('POST', '/copytrade/subscription', {
    follower_login: follower,
    master_id: master,
    policy_version,
    ...(capital === undefined ? {} : { capital }),
  })
}

/**
 * A follower whose copy of a 1-lot EURUSD buy gains about 1,973 USD while its own sell eats its free
 * margin: a performance fee accrued then waits for the margin. `closeMaster` realizes the copy's gain.
 */
async function gainWithNoFreeMargin(policy: object, ownLots: number, closeMaster: boolean) {
  await w.price(1.1)
  const mLogin = await w.newAccount(20_000)
  const m = await w.master(mLogin, policy)
  const f = await w.newAccount(10_000)
  await w.t.settle()
  const sub = await w.follow(f, m, { volume_mode: 1, volume_param: 1 })
  const mo = await w.openTrade(mLogin, 0, 100)
  await w.t.settle()
  const own = await w.openTrade(f, 1, ownLots)
  await w.price(1.12)
  if (closeMaster) {
    expect((await w.closeTrade(mLogin, mo.order)).status).toBe(200)
    await w.t.settle()
  }
  return { m, f, sub, own }
}

/** A 30 % profit-share master's 1-lot EURUSD buy at 1.10, copied 1:1 by a new follower. */
async function profitShareCopy(settings: object) {
  await w.price(1.1)
  const mLogin = await w.newAccount(20_000)
  const m = await w.master(mLogin, { reward_type: 3, percent: 30 })
  const f = await w.newAccount(10_000)
  await w.t.settle()
  const sub = await w.follow(f, m, { volume_mode: 1, volume_param: 1, ...settings })
  const mo = await w.openTrade(mLogin, 0, 100)
  await w.t.settle()
  return { mLogin, f, sub, mo }
}

describe('a fee accrued and waiting for its payment', () => {
  test('counts against the copy equity: the next period end charges no fee on it', async () => {
    const { f, sub, own } = await gainWithNoFreeMargin(HWM_20, 340, false)
    const due = (await w.preview(sub)).performance_fee_now
    expect(due).toBeGreaterThan(300)
    await w.advance(30 * DAY + 60_000)
    await w.t.runJob('copytrade.settle')
    const [fee] = await w.rewardsOf(sub)
    expect(fee).toMatchObject({ reward_name: 'PERFORMANCE_FEE_HWM', status: 'pending', amount: due })
    const after = await w.preview(sub)
    expect(after.fees_owed).toBe(due)
    expect(after.copy_equity).toBeCloseTo(after.high_water_mark, 2)
    expect(after.performance_fee_now).toBe(0)
    // the next period: no new gain, so no new fee
    await w.advance(30 * DAY)
    await w.t.runJob('copytrade.settle')
    expect(await w.rewardsOf(sub)).toHaveLength(1)
    // the margin freed, the fee is paid once
    expect((await w.closeTrade(f, own.order)).status).toBe(200)
    await w.t.settle()
    await w.t.runJob('copytrade.settle')
    const rows = await w.rewardsOf(sub)
    expect(rows.map((r) => r.status)).toEqual(['settled'])
    expect(settled(rows)).toBe(due)
    expect((await w.preview(sub)).fees_owed).toBe(0)
  })

  test('is not charged again at the rate of terms accepted while it waits', async () => {
    const { m, sub } = await gainWithNoFreeMargin(HWM_20, 372, true)
    const u = await w.request('PUT', `/copytrade/master/${m}`, {
      reward_policy: { reward_type: 1, percent: 50, period_days: 30 },
    })
    expect(u.status).toBe(200)
    const version = (await w.request('GET', `/copytrade/masters/${m}`)).json.policy_version
    expect((await w.request('POST', `/copytrade/subscription/${sub}/terms`, { version })).status).toBe(200)
    const [old] = await w.rewardsOf(sub)
    expect(old).toMatchObject({ reward_name: 'PERFORMANCE_FEE_HWM', status: 'pending' })
    const p = await w.preview(sub)
    expect(p.terms.percent).toBe(50)
    expect(p.performance_fee_now).toBe(0)
    await w.advance(30 * DAY + 60_000)
    await w.t.runJob('copytrade.settle')
    expect(await w.rewardsOf(sub)).toHaveLength(1)
  })
})

test('two withdrawals delivered together: the second charges no fee on the fee the first accrued', async () => {
  const { f, sub } = await gainWithNoFreeMargin(HWM_20, 1, true)
  const due = (await w.preview(sub)).performance_fee_now
  expect(due).toBeGreaterThan(300)
  await Promise.all(
    [100, 100].map((amount) =>
      w.post(`/manager/accounts/${f}/balance`, { type: 'withdrawal', amount }, w.s.staff),
    ),
  )
  await w.t.settle()
  await w.t.runJob('copytrade.settle')
  const rows = await w.rewardsOf(sub)
  expect(rows.map((r) => r.reward_name)).toEqual(['PERFORMANCE_FEE_HWM'])
  expect(settled(rows)).toBe(due)
})

test('an OPEN_ONLY copy its master let go of is the follower’s own: no profit share on its later close', async () => {
  const { mLogin, f, sub, mo } = await profitShareCopy({ copy_mode: 1 })
  expect((await w.closeTrade(mLogin, mo.order)).status).toBe(200)
  await w.t.settle()
  const [copy] = await w.positions(f)
  expect(copy).toBeDefined()
  const resultBefore = (await w.preview(sub)).copy_result
  expect((await w.request('POST', `/copytrade/subscription/${sub}/disable`, {})).status).toBe(200)
  await w.t.settle()
  await w.advance(10 * DAY)
  await w.price(1.13)
  expect((await w.closeTrade(f, copy!.order)).status).toBe(200)
  await w.t.settle()
  await w.t.runJob('copytrade.settle')
  expect(await w.rewardsOf(sub)).toEqual([])
  expect((await w.preview(sub)).copy_result).toBe(resultBefore)
})

test('a copy whose link the copier ended first (its close found the position gone) still counts when its close arrives', async () => {
  const { f, sub } = await profitShareCopy({})
  const [copy] = await w.positions(f)
  // as close-copy.ts and the audit mark a link whose follower position was closed before them
  await w.t.ctx.db
    .update(copyLinks)
    .set({ status: 'ended', reason: 'CLOSED_ELSEWHERE' })
    .where(eq(copyLinks.followerTicket, copy!.order))
  await w.price(1.11)
  expect((await w.closeTrade(f, copy!.order)).status).toBe(200)
  await w.t.settle()
  await w.t.runJob('copytrade.settle')
  const rows = await w.rewardsOf(sub)
  expect(rows.map((r) => [r.reward_name, r.status])).toEqual([['PROFIT_SHARE_PER_TRADE', 'settled']])
  expect((await w.preview(sub)).copy_result).toBeGreaterThan(900)
})

test('a subscription period paid, then paused and ended: a new subscription to the master pays what stood still no second time', async () => {
  const mLogin = await w.newAccount(10_000)
  const m = await w.master(mLogin, { reward_type: 0, amount: 30, period_days: 30 })
  const f = await w.newAccount(5_000)
  await w.t.settle()
  const first = await w.follow(f, m)
  await w.t.runJob('copytrade.settle')
  expect((await w.rewardsOf(first)).map((r) => [r.reward_name, r.amount])).toEqual([['SUBSCRIPTION_FEE', 30]])
  const paidUntil = (await w.preview(first)).next_subscription_fee_time
  await w.advance(DAY)
  await w.post(`/copytrade/subscription/${first}/pause`, {})
  await w.advance(35 * DAY)
  await w.post(`/copytrade/subscription/${first}/disable`, {})
  await w.t.settle()
  const second = await w.follow(f, m)
  await w.t.runJob('copytrade.settle')
  expect(await w.rewardsOf(second)).toEqual([])
  // one day of the period was used: 29 days of it are left, from now
  expect((await w.preview(second)).next_subscription_fee_time).toBe(paidUntil + 35 * 86_400)
})

test('a change of terms that loses its race charges nothing: the old terms are charged with the switch', async () => {
  const { m, sub } = await gainWithNoFreeMargin(HWM_20, 1, true)
  const due = (await w.preview(sub)).performance_fee_now
  expect(due).toBeGreaterThan(300)
  expect(
    (
      await w.request('PUT', `/copytrade/master/${m}`, {
        reward_policy: { reward_type: 1, percent: 50, period_days: 30 },
      })
    ).status,
  ).toBe(200)
  const version = (await w.request('GET', `/copytrade/masters/${m}`)).json.policy_version
  // another instance pauses the subscription the moment the old terms' fee is accrued
  await w.t.ctx.db.run(
    sql.raw(`create trigger race_terms after insert on copy_rewards when new.key like 'hwm:%:terms:%'
      begin update copy_subscriptions set paused_at = 1 where id = new.subscription_id; end`),
  )
  try {
    const lost = await w.request('POST', `/copytrade/subscription/${sub}/terms`, { version })
    expect([lost.status, lost.json.error]).toEqual([409, 'INVALID_TRANSITION'])
    expect(await w.rewardsOf(sub)).toEqual([])
    expect((await w.preview(sub)).terms.percent).toBe(20)
  } finally {
    await w.t.ctx.db.run(sql`drop trigger race_terms`)
  }
  expect((await w.request('POST', `/copytrade/subscription/${sub}/terms`, { version })).status).toBe(200)
  await w.t.runJob('copytrade.settle')
  const rows = await w.rewardsOf(sub)
  expect(rows.map((r) => [r.reward_name, r.status])).toEqual([['PERFORMANCE_FEE_HWM', 'settled']])
  expect(settled(rows)).toBe(due)
  expect((await w.preview(sub)).terms.percent).toBe(50)
})

test('the balance is allocated once: a second subscription gets what no other manages, never the same money', async () => {
  const a = await w.master(await w.newAccount(20_000), { reward_type: 4, annual_percent: 2 })
  const b = await w.master(await w.newAccount(20_000), { reward_type: 4, annual_percent: 2 })
  const c = await w.master(await w.newAccount(20_000), { reward_type: 4, annual_percent: 2 })
  const f = await w.newAccount(10_000)
  await w.t.settle()
  const subscribe = subscriber(f)
  await w.request('POST', '/copytrade/follower', { login: f })
  // two at once, each asking for more than half: one gets it
  const both = await Promise.all([subscribe(a, 6_000), subscribe(b, 6_000)])
  expect(both.map((r) => r.status).sort()).toEqual([200, 400])
  const refused = both.find((r) => r.status === 400)!
  expect(refused.json.error).toBe('INVALID_DATA')
  expect(refused.json.message).toMatch(/^capital: between 0 and 4000 /)
  // the default is what is left, and nothing more can be asked
  const rest = await subscribe(c)
  expect(rest.status).toBe(200)
  expect((await w.preview(rest.json.id)).copy_capital).toBe(4_000)
  const loser = both[0]!.status === 400 ? a : b
  const over = await subscribe(loser, 1)
  expect([over.status, over.json.error]).toEqual([400, 'INVALID_DATA'])
  expect(over.json.message).toMatch(/^capital: between 0 and 0 /)
  // a second subscription to the same master is that, whatever the capital
  const again = await subscribe(c, 1)
  expect([again.status, again.json.error]).toEqual([409, 'ALREADY_SUBSCRIBED'])
})

test("the copy equity counts only its own fees owed, never another subscription's", async () => {
  const m = await w.master(await w.newAccount(20_000), HWM_20)
  const g = await w.newAccount(10_000)
  await w.t.settle()
  const sub = await w.follow(g, m)
  // another subscription's fee waiting for its payment, whose row id is that subscription's id
  await w.t.ctx.db.run(
    sql`insert into copy_rewards (id, key, brand_id, subscription_id, master_id, reward_type, follower_login,
          payout_login, base, amount_minor, currency, payout_currency, status, created_at)
        values (900000, 'other-fee', 1, 900000, ${m}, 0, 1, 1, 0, 500000, 'USD', 'USD', 'pending', 0)`,
  )
  try {
    const p = await w.preview(sub)
    expect([p.fees_owed, p.copy_equity, p.high_water_mark]).toEqual([0, 10_000, 10_000])
    await w.advance(30 * DAY + 60_000)
    await w.t.runJob('copytrade.settle')
    expect(await w.rewardsOf(sub)).toEqual([])
  } finally {
    await w.t.ctx.db.run(sql`delete from copy_rewards where key = 'other-fee'`)
  }
})

test('the equity stop weighs what the copies made: a fee paid, as one owed, never trips it', async () => {
  await w.price(1.1)
  const mLogin = await w.newAccount(20_000)
  const m = await w.master(mLogin, { reward_type: 0, amount: 30, period_days: 30 })
  const f = await w.newAccount(1_000)
  await w.t.settle()
  const sub = await w.follow(f, m, { volume_mode: 0, volume_param: 1, equity_stop: 2, equity_stop_type: 1 })
  await w.openTrade(mLogin, 0, 100)
  await w.t.settle()
  expect(await w.positions(f)).toHaveLength(1)
  // the period's 30 USD fee, agreed and paid: more than the 2 % stop (20 USD) of the capital
  await w.t.runJob('copytrade.settle')
  expect((await w.rewardsOf(sub)).map((r) => [r.reward_name, r.amount, r.status])).toEqual([
    ['SUBSCRIPTION_FEE', 30, 'settled'],
  ])
  await w.t.runJob('copytrade.equity-stops')
  await w.t.settle()
  expect((await w.request('GET', `/copytrade/subscription/${sub}`)).json.status_name).toBe('ACTIVE')
  expect(await w.positions(f)).toHaveLength(1)
  // a real loss of the copies still trips it: 0.0500 down on the 0.01-lot copy is 50 USD
  await w.price(1.05)
  await w.t.runJob('copytrade.equity-stops')
  await w.t.settle()
  const stopped = (await w.request('GET', `/copytrade/subscription/${sub}`)).json
  expect([stopped.status_name, stopped.status_reason]).toEqual(['PAUSED', 'EQUITY_STOP'])
})

test('a new capital is weighed once the money moves already committed reach the subscriptions', async () => {
  const { mgmt, a, b, f, subscribe } = await twoMastersAndAFollower()
  const subA = (await subscribe(a)).json.id as number
  let asked: ReturnType<typeof subscribe> | null = null
  // the relay lags (another instance, a busy process): the deposit is committed, its delivery waits
  await w.t.app.relay.whilePaused(async () => {
    await w.post(`/manager/accounts/${f}/balance`, { type: 'deposit', amount: 10_000 }, w.s.staff)
    w.clock.advance(1000)
    asked = subscribe(b)
    await new Promise((resolve) => setTimeout(resolve, 300))
  })
  await w.t.settle()
  // the deposit is A's (its only subscription then): nothing is left for B
  const r = await asked!
  expect([r.status, r.json.error]).toEqual([400, 'INVALID_DATA'])
  expect(r.json.message).toMatch(/^capital: between 0 and 0 /)
  expect((await w.preview(subA)).copy_capital).toBe(20_000)
  // a lag longer than the wait: 409, retry
  const c = await w.master(await w.newAccount(20_000), mgmt)
  await w.t.settle()
  await w.t.app.relay.whilePaused(async () => {
    await w.post(`/manager/accounts/${f}/balance`, { type: 'deposit', amount: 1_000 }, w.s.staff)
    const late = await subscribe(c)
    expect([late.status, late.json.error]).toEqual([409, 'ACCOUNT_SETTLING'])
  })
  await w.t.settle()
  expect((await subscribe(c)).status).toBe(400)
})

/** The master offers `reward_policy`, and the subscription accepts it. */
async function switchTerms(m: number, sub: number, reward_policy: object) {
  expect((await w.request('PUT', `/copytrade/master/${m}`, { reward_policy })).status).toBe(200)
  const version = (await w.request('GET', `/copytrade/masters/${m}`)).json.policy_version
  expect((await w.request('POST', `/copytrade/subscription/${sub}/terms`, { version })).status).toBe(200)
}

test('a subscription period paid, terms switched away and back: the period runs on, paid once', async () => {
  const m = await w.master(await w.newAccount(10_000), SUB)
  const f = await w.newAccount(5_000)
  await w.t.settle()
  const sub = await w.follow(f, m)
  await w.t.runJob('copytrade.settle')
  const terms = (reward_policy: object) => switchTerms(m, sub, reward_policy)
  await w.advance(DAY)
  await terms({ reward_type: 1, percent: 10, period_days: 30 })
  await w.advance(DAY)
  await terms(SUB)
  await w.t.runJob('copytrade.settle')
  const fees = async () => (await w.rewardsOf(sub)).filter((r) => r.reward_name === 'SUBSCRIPTION_FEE')
  expect((await fees()).map((r) => r.amount)).toEqual([30])
  // the next period starts where the paid one ends (day 30)
  await w.advance(28 * DAY + 60_000)
  await w.t.runJob('copytrade.settle')
  expect((await fees()).map((r) => r.amount)).toEqual([30, 30])
})

test("an own trade's close not yet delivered elsewhere does not hold a subscription: copy trading passes it over", async () => {
  await w.price(1.1)
  const { a, b, f, subscribe } = await twoMastersAndAFollower()
  expect((await subscribe(a, 5_000)).status).toBe(200)
  const own = await w.openTrade(f, 0, 1)
  await w.t.settle()
  await w.t.app.relay.whilePaused(async () => {
    expect((await w.closeTrade(f, own.order)).status).toBe(200)
    const started = Date.now()
    expect((await subscribe(b, 1_000)).status).toBe(200)
    expect(Date.now() - started).toBeLessThan(1_500)
  })
  await w.t.settle()
})

test('the capital is weighed on the balance as it is when the subscription is written, after the moves it waited for', async () => {
  const { a, b, f, subscribe } = await twoMastersAndAFollower()
  const subA = (await subscribe(a, 4_000)).json.id as number
  let asked: ReturnType<typeof subscribe> | null = null
  await w.t.app.relay.whilePaused(async () => {
    // a deposit on its way: the subscription reads the balance, then waits for it
    await w.post(`/manager/accounts/${f}/balance`, { type: 'deposit', amount: 10 }, w.s.staff)
    asked = subscribe(b)
    await new Promise((resolve) => setTimeout(resolve, 150))
    // meanwhile 6,000 go out: A takes its share of them
    await w.post(`/manager/accounts/${f}/balance`, { type: 'withdrawal', amount: 6_000 }, w.s.staff)
    await new Promise((resolve) => setTimeout(resolve, 150))
  })
  await w.t.settle()
  const r = await asked!
  expect(r.status).toBe(200)
  const managedA = (await w.preview(subA)).copy_capital
  expect(managedA).toBeCloseTo(1_604, 0)
  // what is left of the 4,010, not of the 10,010 read first
  expect((await w.preview(r.json.id)).copy_capital).toBeCloseTo(4_010 - managedA, 2)
})

test("a copy fee's payment on its way holds no subscription: copy trading takes no copy reward as a flow", async () => {
  const fixed = await w.master(await w.newAccount(20_000), { reward_type: 0, amount: 30, period_days: 30 })
  const other = await w.master(await w.newAccount(20_000), { reward_type: 4, annual_percent: 2 })
  const f = await w.newAccount(10_000)
  await w.t.settle()
  await w.follow(f, fixed, { capital: 5_000 })
  await w.t.app.relay.whilePaused(async () => {
    await w.t.runJob('copytrade.settle') // the period's fee paid: a balance operation out, not yet delivered
    const started = Date.now()
    const { policy_version } = (await w.request('GET', `/copytrade/masters/${other}`)).json
    const r = await w.request('POST', '/copytrade/subscription', {
      follower_login: f,
      master_id: other,
      policy_version,
      capital: 1_000,
    })
    expect(r.status).toBe(200)
    expect(Date.now() - started).toBeLessThan(1_500)
  })
  await w.t.settle()
})

const SUB = { reward_type: 0, amount: 30, period_days: 30 }

/** A master on a 30-day subscription fee, and a new account's subscription that paid its first period. */
async function paidSubscription() {
  const m = await w.master(await w.newAccount(10_000), SUB)
  const f = await w.newAccount(5_000)
  await w.t.settle()
  const start = w.clock.now()
  const sub = await w.follow(f, m)
  await w.t.runJob('copytrade.settle')
  return { m, f, sub, start }
}

test('a subscription period paid, paused, then terms switched away and back: the pause still moves the next fee on', async () => {
  const { m, sub, start } = await paidSubscription()
  // ten days paused: the paid period ends on day 40
  await w.post(`/copytrade/subscription/${sub}/pause`, {})
  await w.advance(10 * DAY)
  await w.post(`/copytrade/subscription/${sub}/resume`, {})
  const terms = (reward_policy: object) => switchTerms(m, sub, reward_policy)
  await w.advance(DAY)
  await terms({ reward_type: 1, percent: 10, period_days: 30 })
  // no subscription fee is due under these terms
  expect((await w.preview(sub)).next_subscription_fee_time).toBe(0)
  await w.advance(DAY)
  await terms(SUB)
  expect((await w.preview(sub)).next_subscription_fee_time).toBe(Math.floor((start + 40 * DAY) / 1000))
  const fees = async () => (await w.rewardsOf(sub)).filter((r) => r.reward_name === 'SUBSCRIPTION_FEE')
  // day 31: the period paid, moved on by the pause, still runs
  await w.advance(19 * DAY + 60_000)
  await w.t.runJob('copytrade.settle')
  expect((await fees()).map((r) => r.amount)).toEqual([30])
  await w.advance(9 * DAY)
  await w.t.runJob('copytrade.settle')
  expect((await fees()).map((r) => r.amount)).toEqual([30, 30])
})

test("terms that bring the subscription fee back read the period any of the account's subscriptions paid", async () => {
  const PERF = { reward_type: 1, percent: 10, period_days: 30 }
  const { m, f, sub: first, start } = await paidSubscription()
  await w.post(`/copytrade/subscription/${first}/disable`, {})
  expect((await w.request('PUT', `/copytrade/master/${m}`, { reward_policy: PERF })).status).toBe(200)
  const second = await w.follow(f, m)
  // as a subscription made on other terms before they kept a paid period's end
  await w.t.ctx.db.run(sql`update copy_subscriptions set next_fee_at = null where id = ${second}`)
  await w.advance(DAY)
  await switchTerms(m, second, SUB)
  expect((await w.preview(second)).next_subscription_fee_time).toBe(Math.floor((start + 30 * DAY) / 1000))
  await w.t.runJob('copytrade.settle')
  expect((await w.rewardsOf(second)).filter((r) => r.reward_name === 'SUBSCRIPTION_FEE')).toEqual([])
})
