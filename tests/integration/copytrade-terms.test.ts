// Copy trading moves money only where a follower agreed it would (issue 39): the terms accepted stay the
// terms charged, resume and settings changes copy what the master holds, no fee while paused or twice for
// one period, statistics count a partial close once, a partial close follows what the follower holds, one
// code for an invalid reward policy, capital flows written with their delivery. Time is moved, not slept.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { and, eq } from 'drizzle-orm'
import { ManualClock } from '../../src/kernel/clock'
import { copyLinks, copySubscriptions } from '../../src/modules/copytrade/schema'
import { type TradingApi, TradingPort } from '../../src/modules/trading'
import { orders } from '../../src/modules/trading/schema'
import { makeTestApp, type TestApp } from '../support/app'
import { followMaster } from '../support/copy-fees'

const DAY = 86_400_000
const clock = new ManualClock(Date.UTC(2026, 10, 24, 8, 0, 0))
let t: TestApp
let demo: string
let staff: string
let dealer: string
let customerId: number
let eurusd = 1.1

const quotes = () =>
  t.request('POST', '/market/quotes', {
    token: dealer,
    body: {
      ticks: [
        { symbol: 'EURUSD', bid: eurusd, ask: eurusd + 0.0002 },
        { symbol: 'GBPUSD', bid: 1.27, ask: 1.2702 },
      ],
    },
  })
const call = (method: string, path: string, body?: unknown, token = demo) =>
  t.request(method, path, { token, body })
const post = async (path: string, body: unknown, token = demo) => {
  const r = await call('POST', path, body, token)
  if (r.status !== 200) throw new Error(`${path}: ${r.status} ${r.text}`)
  return r.json
}
const newAccount = async (deposit: number) => {
  const a = await post(
    '/manager/accounts',
    { group: 'real\\USD', password: 'terms-pass-1', customer_id: customerId },
    staff,
  )
  if (deposit > 0)
    await post(`/manager/accounts/${a.login}/balance`, { type: 'deposit', amount: deposit }, staff)
  return a.login as number
}
const master = async (login: number, reward_policy: object) =>
  (await post('/copytrade/master', { login, name: `T${login}`, public: 1, reward_policy })).id as number
const follow = (login: number, masterId: number, settings: object = {}) =>
  followMaster(t, demo, login, masterId, settings)
const token = (login: number) => t.userToken(login, 'terms-pass-1')
const openTrade = async (login: number, cmd: number, volume: number, symbol = 'EURUSD') =>
  (await post('/trade/open', { login, symbol, cmd, volume, sl: 0, tp: 0 }, await token(login)))
    .order as number
const closeTrade = async (login: number, order: number, volume?: number) => {
  const r = await t.request('DELETE', '/trade/close', {
    token: await token(login),
    body: { order, ...(volume ? { volume } : {}) },
  })
  if (r.status !== 200) throw new Error(`close: ${r.status} ${r.text}`)
  return r.json
}
const rewardsOf = async (sub: number) =>
  (await call('GET', `/copytrade/subscription/${sub}/rewards`)).json.rows as {
    reward_name: string
    amount: number
    base: number
    status: string
  }[]
type TradeOpen = ReturnType<TradingApi['open']>
/**
 * A master's market open whose first copy's fill runs inside `around` (once: the write port's own open
 * is back for anything `around` does), then every after-step settled; the master's order.
 */
async function openAroundCopy(mLogin: number, around: (open: () => TradeOpen) => TradeOpen) {
  const trading = t.ports.get(TradingPort)
  const fill = trading.open
  trading.open = (input) => {
    trading.open = fill
    return around(() => fill.call(trading, input))
  }
  try {
    const order = await openTrade(mLogin, 0, 10)
    await t.settle()
    return order
  } finally {
    trading.open = fill
  }
}
const openOf = async (login: number) =>
  t.ctx.db
    .select()
    .from(orders)
    .where(and(eq(orders.login, login), eq(orders.state, 'open')))

async function signIn() {
  demo = await t.customerToken()
  staff = await t.staffToken(2, 'admin-pass-1')
  dealer = await t.staffToken(3, 'dealer-pass-1')
}
async function advance(ms: number) {
  clock.advance(ms)
  await signIn()
  await quotes()
}

beforeAll(async () => {
  t = await makeTestApp({ clock })
  await signIn()
  customerId = (await call('GET', '/customer/me')).json.id
  await quotes()
  await t.settle()
})
afterAll(() => t.close())

test('a master raising its fee charges existing followers the terms they accepted until they accept the new ones', async () => {
  const mLogin = await newAccount(10_000)
  const m = await master(mLogin, { reward_type: 2, per_lot: 3 })
  const f = await newAccount(10_000)
  await t.settle()
  const sub = await follow(f, m, { volume_mode: 1, volume_param: 1 })
  expect((await call('GET', `/copytrade/subscription/${sub}`)).json.terms).toMatchObject({
    reward_type: 2,
    per_lot: 3,
    version: 1,
  })
  const up = await call('PUT', `/copytrade/master/${m}`, { reward_policy: { reward_type: 2, per_lot: 1000 } })
  expect(up.status).toBe(200)
  const market = (await call('GET', `/copytrade/masters/${m}`)).json
  expect([market.reward_policy.per_lot, market.policy_version]).toEqual([1000, 2])
  const s = (await call('GET', `/copytrade/subscription/${sub}`)).json
  expect([s.terms.per_lot, s.terms_pending]).toEqual([3, true])
  expect((await call('GET', `/copytrade/subscription/${sub}/fees`)).json.terms.per_lot).toBe(3)
  // 0.50 lot copied: 0.5 x 3 = 1.50, not 500
  const o = await openTrade(mLogin, 0, 50)
  await t.settle()
  expect((await rewardsOf(sub)).map((r) => [r.reward_name, r.amount])).toEqual([['VOLUME_REBATE', 1.5]])
  await closeTrade(mLogin, o)
  await t.settle()
  // accepting needs the version read; then the new terms apply to the next copies
  const stale = await call('POST', `/copytrade/subscription/${sub}/terms`, { version: 1 })
  expect([stale.status, stale.json.error]).toEqual([409, 'TERMS_CHANGED'])
  // a hostile probe: without a version, the subscription took whatever the terms were by then (a fee
  // the follower never saw): a subscription names the terms it accepts
  const unnamed = await call('POST', '/copytrade/subscription', { follower_login: f, master_id: m })
  expect([unnamed.status, unnamed.json.error]).toEqual([400, 'INVALID_DATA'])
  expect(unnamed.json.message).toStartWith('policy_version')
  const ok = await call('POST', `/copytrade/subscription/${sub}/terms`, { version: 2 })
  expect([ok.json.terms.per_lot, ok.json.terms_pending]).toEqual([1000, false])
  await openTrade(mLogin, 0, 1)
  await t.settle()
  expect((await rewardsOf(sub)).map((r) => r.amount)).toEqual([10, 1.5])
  // a new subscription takes the terms of the moment
  const f2 = await newAccount(10_000)
  await t.settle()
  const sub2 = await follow(f2, m)
  expect((await call('GET', `/copytrade/subscription/${sub2}`)).json.terms).toMatchObject({
    per_lot: 1000,
    version: 2,
  })
})

test('resume and settings changes copy what the master holds; a position the follower closed stays closed', async () => {
  const mLogin = await newAccount(10_000)
  const m = await master(mLogin, { reward_type: 3, percent: 10 })
  const f = await newAccount(10_000)
  await t.settle()
  const sub = await follow(f, m, { volume_mode: 0, volume_param: 1, symbols_mode: 1, symbols: ['GBPUSD'] })
  await post(`/copytrade/subscription/${sub}/pause`, {})
  const a = await openTrade(mLogin, 0, 10)
  await t.settle()
  expect(await openOf(f)).toHaveLength(0)
  // resumed: EURUSD is still filtered out
  await post(`/copytrade/subscription/${sub}/resume`, {})
  await t.settle()
  expect(await openOf(f)).toHaveLength(0)
  // INCLUDE [GBPUSD] -> ALL: the EURUSD position the skip was about is copied now
  await call('PUT', `/copytrade/subscription/${sub}`, { symbols_mode: 0 })
  await t.settle()
  const copies = await openOf(f)
  expect(copies.map((o) => o.comment)).toEqual([`copy #${a}`])
  // the follower closes it by hand: a later change never reopens it
  await closeTrade(f, copies[0]!.ticket)
  await t.settle()
  await call('PUT', `/copytrade/subscription/${sub}`, { max_positions: 5 })
  await t.settle()
  expect(await openOf(f)).toHaveLength(0)
  const [link] = await t.ctx.db
    .select()
    .from(copyLinks)
    .where(and(eq(copyLinks.subscriptionId, sub), eq(copyLinks.masterTicket, a)))
  expect(link!.status).toBe('ended')
  await closeTrade(mLogin, a)
  await t.settle()
})

test("the master's statistics count a partial close once; a copy closes the master's ratio of what it holds", async () => {
  const mLogin = await newAccount(10_000)
  const m = await master(mLogin, { reward_type: 3, percent: 10 })
  const f = await newAccount(10_000)
  await t.settle()
  await follow(f, m, { volume_mode: 1, volume_param: 1 })
  const o = await openTrade(mLogin, 0, 30)
  await t.settle()
  const [copy] = await openOf(f)
  expect(copy!.volume).toBe(30)
  // the follower closes 0.10 of its 0.30 itself; the master then closes half of its position
  await closeTrade(f, copy!.ticket, 10)
  await t.settle()
  eurusd = 1.101
  await quotes()
  await closeTrade(mLogin, o, 15)
  await t.settle()
  const [left] = await openOf(f)
  expect(left!.volume).toBe(10)
  await closeTrade(mLogin, o)
  await t.settle()
  expect(await openOf(f)).toHaveLength(0)
  eurusd = 1.1
  await quotes()
  // two closed rows of the master: two trades, and their results once each
  const closed = await t.ctx.db
    .select()
    .from(orders)
    .where(and(eq(orders.login, mLogin), eq(orders.state, 'closed')))
  expect(closed).toHaveLength(2)
  const pnl = closed.reduce((a, r) => a + r.profit + r.commission + r.storage, 0)
  const stats = (await call('GET', `/copytrade/masters/${m}`)).json.stats
  expect(stats.trades).toBe(2)
  expect(Math.round(stats.pnl * 100)).toBe(pnl)
})

test('every invalid reward policy answers INVALID_REWARD_POLICY naming the field', async () => {
  const login = await newAccount(0)
  const cases: [object, string][] = [
    [{ reward_type: 3, percent: 150 }, 'reward_policy.percent'],
    [{ reward_type: 7, percent: 20 }, 'reward_policy.reward_type'],
    [{ reward_type: 3, percent: '20' }, 'reward_policy.percent'],
    [{ reward_type: 3 }, 'reward_policy.percent'],
    [{ reward_type: 0, amount: 5 }, 'reward_policy.period_days'],
  ]
  for (const [reward_policy, field] of cases) {
    const r = await call('POST', '/copytrade/master', { login, name: 'X', reward_policy })
    expect(
      [r.status, r.json.error, r.json.message?.startsWith(field)],
      JSON.stringify(reward_policy),
    ).toEqual([400, 'INVALID_REWARD_POLICY', true])
  }
})

test('capital flows are written with their delivery: a lost after-step loses nothing', async () => {
  const mLogin = await newAccount(10_000)
  const m = await master(mLogin, { reward_type: 3, percent: 10 })
  const f = await newAccount(1_000)
  await t.settle()
  const sub = await follow(f, m)
  const flow = t.ctx.events
    .consumersOf('account.balance_operation')
    .find((c) => c.name === 'copytrade.capital-flow')!
  const after = flow.after
  flow.after = async () => {
    throw new Error('after-step lost')
  }
  try {
    await post(`/manager/accounts/${f}/balance`, { type: 'deposit', amount: 500 }, staff)
    await t.settle()
  } finally {
    flow.after = after
  }
  const [s] = await t.ctx.db.select().from(copySubscriptions).where(eq(copySubscriptions.id, sub))
  expect([s!.capitalMinor, s!.hwmMinor]).toEqual([150_000, 150_000])
})

test('symbols are checked against the symbols that exist; a subscription manages the capital allocated to it', async () => {
  const mLogin = await newAccount(10_000)
  const m = await master(mLogin, { reward_type: 3, percent: 10 })
  const f = await newAccount(10_000)
  await t.settle()
  await call('POST', '/copytrade/follower', { login: f })
  const policy_version = (await call('GET', `/copytrade/masters/${m}`)).json.policy_version
  const lower = await call('POST', '/copytrade/subscription', {
    follower_login: f,
    master_id: m,
    policy_version,
    symbols_mode: 1,
    symbols: ['eurusd'],
  })
  expect([lower.status, lower.json.error, lower.json.message]).toEqual([
    400,
    'INVALID_DATA',
    'symbols: no such symbol eurusd',
  ])
  const over = await call('POST', '/copytrade/subscription', {
    follower_login: f,
    master_id: m,
    policy_version,
    capital: 20_000,
  })
  expect([over.status, over.json.error]).toEqual([400, 'INVALID_DATA'])
  // a quarter of the balance: sized on it (BALANCE_RATIO 1 against the master's 10,000)
  const sub = await post('/copytrade/subscription', {
    follower_login: f,
    master_id: m,
    policy_version,
    capital: 2_500,
    volume_mode: 3,
    volume_param: 1,
  })
  expect(sub.start_balance).toBe(2500)
  const o = await openTrade(mLogin, 0, 100)
  await t.settle()
  expect((await openOf(f)).map((x) => x.volume)).toEqual([25])
  await closeTrade(mLogin, o)
  await t.settle()
})

test('accepting another reward policy settles the old one first: gains made under it are charged at its rate, never at the new one', async () => {
  const mLogin = await newAccount(10_000)
  const m = await master(mLogin, { reward_type: 1, percent: 10, period_days: 30 })
  const f = await newAccount(10_000)
  await t.settle()
  const sub = await follow(f, m, { volume_mode: 1, volume_param: 1 })
  const fees = async () => (await call('GET', `/copytrade/subscription/${sub}/fees`)).json
  const o = await openTrade(mLogin, 0, 100)
  await t.settle()
  eurusd = 1.12
  await quotes()
  const raised = await call('PUT', `/copytrade/master/${m}`, {
    reward_policy: { reward_type: 1, percent: 50, period_days: 30 },
  })
  expect(raised.status).toBe(200)
  // not while a copy is open: its result would be charged again, or never, by a per-trade fee
  const early = await call('POST', `/copytrade/subscription/${sub}/terms`, { version: 2 })
  expect([early.status, early.json.error]).toEqual([409, 'INVALID_TRANSITION'])
  await closeTrade(mLogin, o)
  await t.settle()
  const before = await fees()
  expect([before.open_copies, before.performance_fee_now > 0]).toEqual([0, true])
  const ok = await call('POST', `/copytrade/subscription/${sub}/terms`, { version: 2 })
  expect([ok.status, ok.json.terms.percent]).toEqual([200, 50])
  await t.settle()
  // the gains so far paid 10 %, at the switch
  const rows = await rewardsOf(sub)
  expect(rows.map((r) => [r.reward_name, r.status])).toEqual([['PERFORMANCE_FEE_HWM', 'settled']])
  expect(rows[0]!.amount).toBeCloseTo(before.performance_fee_now, 1)
  // and nothing of them is left for the new rate: the mark is the equity after that fee
  const after = await fees()
  expect(after.performance_fee_now).toBe(0)
  expect(after.high_water_mark).toBeCloseTo(after.copy_equity, 2)
  eurusd = 1.1
  await quotes()
  await t.settle()
})

test('a subscription names the terms version its follower read: changed since, 409 TERMS_CHANGED and no fee', async () => {
  const mLogin = await newAccount(10_000)
  const m = await master(mLogin, { reward_type: 3, percent: 1 })
  const f = await newAccount(10_000)
  await t.settle()
  await call('POST', '/copytrade/follower', { login: f })
  const read = (await call('GET', `/copytrade/masters/${m}`)).json.policy_version as number
  // the master switches to a subscription fee between the follower's read and its subscribe
  const up = await call('PUT', `/copytrade/master/${m}`, {
    reward_policy: { reward_type: 0, amount: 5000, period_days: 30 },
  })
  expect(up.status).toBe(200)
  const stale = await call('POST', '/copytrade/subscription', {
    follower_login: f,
    master_id: m,
    policy_version: read,
  })
  expect([stale.status, stale.json.error]).toEqual([409, 'TERMS_CHANGED'])
  await t.runJob('copytrade.settle')
  expect((await call('GET', `/balance/me?login=${f}`, undefined, await token(f))).json.balance).toBe(10_000)
  // the version now current: subscribed on exactly those terms
  const current = (await call('GET', `/copytrade/masters/${m}`)).json.policy_version as number
  const ok = await post('/copytrade/subscription', {
    follower_login: f,
    master_id: m,
    policy_version: current,
  })
  expect(ok.terms).toMatchObject({ reward_type: 0, version: current })
  await post(`/copytrade/subscription/${ok.id}/disable`, {})
})

test('a stop that commits while a copy is being opened closes that copy at once, unbilled; a pause lets it complete', async () => {
  const mLogin = await newAccount(10_000)
  const m = await master(mLogin, { reward_type: 3, percent: 10 })
  const copiedVolume = async () => (await call('GET', `/copytrade/masters/${m}`)).json.copied_volume as number
  for (const action of ['pause', 'disable'] as const) {
    const f = await newAccount(10_000)
    await t.settle()
    const sub = await follow(f, m, { volume_mode: 0, volume_param: 1 })
    const before = await copiedVolume()
    // the follower's request commits after the copy's fill, before the copier records it
    const a = await openAroundCopy(mLogin, async (open) => {
      const r = await open()
      await post(`/copytrade/subscription/${sub}/${action}`, {})
      return r
    })
    const [link] = await t.ctx.db
      .select()
      .from(copyLinks)
      .where(and(eq(copyLinks.subscriptionId, sub), eq(copyLinks.masterTicket, a)))
    if (action === 'disable') {
      expect(await openOf(f)).toEqual([])
      expect([link!.status, link!.reason]).toEqual([
        'closed',
        'the subscription ended while the copy was opened',
      ])
      expect(await copiedVolume()).toBe(before)
    } else {
      // decided before the pause: it completes, and the pause's closes follow the master from here
      expect((await openOf(f)).map((o) => o.comment)).toEqual([`copy #${a}`])
      expect(link!.status).toBe('open')
      expect(await copiedVolume()).toBeGreaterThan(before)
    }
    await closeTrade(mLogin, a)
    await t.settle()
    expect(await openOf(f)).toEqual([])
  }
})

// a hostile probe: the links of one batch were all `opening`, each counted the others, and a master with
// more positions than max_positions was copied not at all, on every resync
test('a subscription to a master holding more positions than max_positions copies max_positions of them', async () => {
  const mLogin = await newAccount(10_000)
  const m = await master(mLogin, { reward_type: 3, percent: 10 })
  const f = await newAccount(10_000)
  const held = [
    await openTrade(mLogin, 0, 10),
    await openTrade(mLogin, 0, 10),
    await openTrade(mLogin, 1, 10),
  ]
  await t.settle()
  await follow(f, m, { volume_mode: 0, volume_param: 1, max_positions: 2 })
  await t.settle()
  expect(await openOf(f)).toHaveLength(2)
  for (const o of held) await closeTrade(mLogin, o)
  await t.settle()
  expect(await openOf(f)).toHaveLength(0)
})

test('max_positions: a link skipped for another reason takes no slot from the links after it', async () => {
  const mLogin = await newAccount(10_000)
  const m = await master(mLogin, { reward_type: 3, percent: 10 })
  const f = await newAccount(10_000)
  const held = [
    await openTrade(mLogin, 0, 10, 'GBPUSD'),
    await openTrade(mLogin, 0, 10),
    await openTrade(mLogin, 1, 10),
  ]
  await t.settle()
  // the GBPUSD link comes first and is filtered out: both EURUSD positions are copied
  await follow(f, m, {
    volume_mode: 0,
    volume_param: 1,
    max_positions: 2,
    symbols_mode: 1,
    symbols: ['EURUSD'],
  })
  await t.settle()
  expect((await openOf(f)).map((o) => o.symbol)).toEqual(['EURUSD', 'EURUSD'])
  for (const o of held) await closeTrade(mLogin, o)
  await t.settle()
  expect(await openOf(f)).toHaveLength(0)
})

test('max_positions holds across executors: a link opened while another is being opened counts it, whatever their order', async () => {
  const mLogin = await newAccount(10_000)
  const m = await master(mLogin, { reward_type: 3, percent: 10 })
  const f = await newAccount(10_000)
  await t.settle()
  const sub = await follow(f, m, { volume_mode: 0, volume_param: 1, max_positions: 1 })
  const a = await openTrade(mLogin, 0, 10)
  await t.settle()
  const b = await openTrade(mLogin, 0, 10)
  await t.settle()
  expect(await openOf(f)).toHaveLength(1)
  await closeTrade(mLogin, a)
  await t.settle()
  expect(await openOf(f)).toHaveLength(0)
  // b's link (skipped while a's copy was open) as an executor that died left it: pending, long ago
  await t.ctx.db
    .update(copyLinks)
    .set({ status: 'pending', updatedAt: 0, leaseUntil: 0 })
    .where(and(eq(copyLinks.subscriptionId, sub), eq(copyLinks.masterTicket, b)))
  // while c's copy is being opened, the reconcile job of another executor takes b's link
  const c = await openAroundCopy(mLogin, async (open) => {
    await t.runJob('copytrade.reconcile')
    return open()
  })
  expect(await openOf(f)).toHaveLength(1)
  for (const o of [b, c]) await closeTrade(mLogin, o)
  await t.settle()
  expect(await openOf(f)).toHaveLength(0)
})

test('a master its owner disabled is not copied when a follower resumes or changes settings', async () => {
  const mLogin = await newAccount(10_000)
  const m = await master(mLogin, { reward_type: 3, percent: 10 })
  const f = await newAccount(10_000)
  await t.settle()
  const sub = await follow(f, m, { volume_mode: 0, volume_param: 1 })
  await post(`/copytrade/subscription/${sub}/pause`, {})
  const a = await openTrade(mLogin, 0, 10)
  await t.settle()
  expect((await call('PUT', `/copytrade/master/${m}`, { enabled: 0 })).status).toBe(200)
  await post(`/copytrade/subscription/${sub}/resume`, {})
  expect((await call('PUT', `/copytrade/subscription/${sub}`, { max_positions: 5 })).status).toBe(200)
  await t.settle()
  expect(await openOf(f)).toEqual([])
  await closeTrade(mLogin, a)
  await t.settle()
})

test("a master's stricter manual_trading_mode is new terms: accepted alone, it keeps the fee schedule", async () => {
  const mLogin = await newAccount(10_000)
  const m = await master(mLogin, { reward_type: 1, percent: 20, period_days: 7 })
  const f = await newAccount(1_000)
  await t.settle()
  const sub = await follow(f, m)
  const row = async () =>
    (await t.ctx.db.select().from(copySubscriptions).where(eq(copySubscriptions.id, sub)))[0]!
  const before = await row()
  await advance(3_600_000)
  const put = await call('PUT', `/copytrade/master/${m}`, { manual_trading_mode: 1 })
  expect(put.json.policy_version).toBe(2)
  const accepted = await post(`/copytrade/subscription/${sub}/terms`, { version: 2 })
  expect(accepted.terms).toMatchObject({ reward_type: 1, percent: 20, version: 2, manual_trading_mode: 1 })
  const after = await row()
  // the reward policy did not change: its period runs on as it was
  expect([after.nextPerfAt, after.mgmtDay, after.hwmMinor]).toEqual([
    before.nextPerfAt,
    before.mgmtDay,
    before.hwmMinor,
  ])
  await post(`/copytrade/subscription/${sub}/disable`, {})
})

// last: it moves the clock by days (into a weekend, when EURUSD does not trade)
test('no subscription fee while paused; a period paid is not charged again by a new subscription', async () => {
  const mLogin = await newAccount(10_000)
  const m = await master(mLogin, { reward_type: 0, amount: 10, period_days: 1 })
  const f = await newAccount(1_000)
  await t.settle()
  const sub = await follow(f, m)
  await t.runJob('copytrade.settle')
  expect((await rewardsOf(sub)).map((r) => r.amount)).toEqual([10])
  await post(`/copytrade/subscription/${sub}/pause`, {})
  await advance(2 * DAY)
  await t.runJob('copytrade.settle')
  await post(`/copytrade/subscription/${sub}/resume`, {})
  await t.runJob('copytrade.settle')
  // the day paid before the pause runs on after it: nothing is due at the resume
  expect(await rewardsOf(sub)).toHaveLength(1)
  await advance(DAY + 60_000)
  await t.runJob('copytrade.settle')
  expect(await rewardsOf(sub)).toHaveLength(2)
  // disabled and subscribed again within the period just paid: not charged twice
  await post(`/copytrade/subscription/${sub}/disable`, {})
  const again = await follow(f, m)
  await t.runJob('copytrade.settle')
  expect(await rewardsOf(again)).toEqual([])
  await advance(DAY)
  await t.runJob('copytrade.settle')
  expect(await rewardsOf(again)).toHaveLength(1)
  await post(`/copytrade/subscription/${again}/disable`, {})
})

// after the one above (it moves the clock by days too)
test('no fee while the master is disabled, by its owner or by staff: the fee clocks stand still with it, a pause in between counted once', async () => {
  const fixedLogin = await newAccount(10_000)
  const fixed = await master(fixedLogin, { reward_type: 0, amount: 10, period_days: 1 })
  const mgmt = await master(await newAccount(10_000), { reward_type: 4, annual_percent: 2 })
  const f1 = await newAccount(1_000)
  const f2 = await newAccount(10_000)
  await t.settle()
  const subFixed = await follow(f1, fixed)
  const subMgmt = await follow(f2, mgmt)
  await t.runJob('copytrade.settle')
  expect((await rewardsOf(subFixed)).map((r) => r.amount)).toEqual([10])
  const enabled = async (id: number, on: 0 | 1) =>
    expect((await call('PUT', `/copytrade/master/${id}`, { enabled: on })).status).toBe(200)
  // half a day into the paid day, both masters are disabled by their owner for two days
  await advance(DAY / 2)
  await enabled(fixed, 0)
  await enabled(mgmt, 0)
  // the follower sees its fees stand still, and since when
  const stoppedAt = Math.floor(clock.now() / 1000)
  const clockOf = async (sub: number) =>
    (await call('GET', `/copytrade/subscription/${sub}/fees`)).json.fee_clock_stopped_since
  expect([await clockOf(subFixed), await clockOf(subMgmt)]).toEqual([stoppedAt, stoppedAt])
  await advance(DAY)
  await t.runJob('copytrade.settle')
  // a pause and a resume while the master is still disabled do not start the clock again
  await post(`/copytrade/subscription/${subFixed}/pause`, {})
  await advance(DAY / 2)
  await post(`/copytrade/subscription/${subFixed}/resume`, {})
  await advance(DAY / 2)
  await t.runJob('copytrade.settle')
  expect((await rewardsOf(subFixed)).map((r) => r.amount)).toEqual([10])
  // the disable stopped a running clock: the day it ran in (half of it) is charged then, nothing since
  const oneDay = ['MANAGEMENT_FEE', 0.54]
  expect((await rewardsOf(subMgmt)).map((r) => [r.reward_name, r.amount])).toEqual([oneDay])
  // enabled again: half of the paid day is left, and the disabled days owe no management fee
  await enabled(fixed, 1)
  await enabled(mgmt, 1)
  expect([await clockOf(subFixed), await clockOf(subMgmt)]).toEqual([0, 0])
  await t.runJob('copytrade.settle')
  expect((await rewardsOf(subFixed)).map((r) => r.amount)).toEqual([10])
  expect((await rewardsOf(subMgmt)).map((r) => [r.reward_name, r.amount])).toEqual([oneDay])
  await advance(DAY / 2 + 60_000)
  await t.runJob('copytrade.settle')
  expect((await rewardsOf(subFixed)).map((r) => r.amount)).toEqual([10, 10])
  await advance(DAY / 2)
  await t.runJob('copytrade.settle')
  // one day of 2 % a year on 10,000.00 = floor(1,000,000 x 2 / 100 / 365) = 54 cents: the day it was
  // enabled again (the days disabled throughout owe nothing), after the day it was disabled in
  expect((await rewardsOf(subMgmt)).map((r) => [r.reward_name, r.amount])).toEqual([oneDay, oneDay])
  // staff disable the master without ending its subscriptions: no fee for as long as it stays so
  expect(
    (await call('POST', `/manager/copytrade/masters/${fixed}/disable`, { reason: 'review' }, staff)).status,
  ).toBe(200)
  await advance(3 * DAY)
  await t.runJob('copytrade.settle')
  expect((await rewardsOf(subFixed)).map((r) => r.amount)).toEqual([10, 10])
  const s = (await call('GET', `/copytrade/subscription/${subFixed}`)).json
  expect(s.status_name).toBe('ACTIVE')
  await post(`/copytrade/subscription/${subFixed}/disable`, {})
  await post(`/copytrade/subscription/${subMgmt}/disable`, {})
})
