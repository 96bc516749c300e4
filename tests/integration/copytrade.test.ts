// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
// Copy trading (issue 31): the routes and rules of spec 4.12 with the codes of 7.5, and copying driven by
// ingested quotes through trading's write port: opens, partial closes, closes, skips with reasons, rewards.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { and, eq } from 'drizzle-orm'
import { balanceOperations } from '../../src/modules/accounts/schema'
import { copyLinks, copyRecords } from '../../src/modules/copytrade/schema'
import { TradingPort } from '../../src/modules/trading'
import { orders } from '../../src/modules/trading/schema'
import { makeTestApp, type TestApp } from '../support/app'

let t: TestApp
let demo: string // demo@example.com: 100001 REAL, 100002 DEMO, 100003 REAL EUR
let master: string // master@example.com: 100004 REAL (the seeded public master)
let masterUser: string
let dealer: string
let masterId: number

const quote = (symbol: string, bid: number, ask: number) =>
  t.request('POST', '/market/quotes', { token: dealer, body: { ticks: [{ symbol, bid, ask }] } })
const open = (
  login: number,
  token: string,
  o: { cmd: number; volume: number; symbol?: string; sl?: number; tp?: number },
) =>
  t.request('POST', '/trade/open', {
    token,
    body: { login, symbol: o.symbol ?? 'EURUSD', cmd: o.cmd, volume: o.volume, sl: o.sl ?? 0, tp: o.tp ?? 0 },
  })
const openOf = async (login: number) =>
  (
    await t.ctx.db
      .select()
      .from(orders)
      .where(and(eq(orders.login, login), eq(orders.state, 'open')))
  ).sort((a, b) => a.ticket - b.ticket)

beforeAll(async () => {
  t = await makeTestApp()
  demo = await t.customerToken()
  master = await t.customerToken('master@example.com', 'master-pass-1')
  masterUser = await t.userToken(100004, 'master-pass-1')
  dealer = await t.staffToken(3, 'dealer-pass-1')
  expect((await quote('EURUSD', 1.1, 1.1002)).status).toBe(200)
  expect((await quote('BTCUSD', 43_000, 43_030)).status).toBe(200)
  await t.settle()
  const mine = await t.request('GET', '/copytrade/master/mine', { token: master })
  expect(mine.status).toBe(200)
  masterId = mine.json.rows[0].id
})
afterAll(() => t.close())

describe('masters (rules 1-3, 9)', () => {
  const body = { name: 'X', reward_policy: { reward_type: 3, percent: 10 } }
  test('each refusal answers its code and status', async () => {
    const cases: [unknown, number, string][] = [
      [{ ...body, login: 100004 }, 403, 'INVALID_ACCOUNT'], // another customer's account
      [{ ...body, login: 100002 }, 400, 'MASTER_ACCOUNT_MUST_BE_REAL'],
      [{ name: 'X', login: 100001 }, 400, 'REWARD_POLICY_REQUIRED'],
      [{ ...body, login: 100001, reward_policy: { reward_type: 3 } }, 400, 'INVALID_REWARD_POLICY'],
      [
        { ...body, login: 100001, reward_policy: { reward_type: 3, percent: 10, amount: 5 } },
        400,
        'INVALID_REWARD_POLICY',
      ],
      [{ ...body, login: 100001, payout_login: 100002 }, 400, 'INVALID_PAYOUT_ACCOUNT'], // DEMO
      [{ ...body, login: 100001, payout_login: 100004 }, 400, 'INVALID_PAYOUT_ACCOUNT'], // not the customer's
      [{ ...body, login: 100001, reward_policy: { reward_type: 9 } }, 400, 'INVALID_REWARD_POLICY'], // one code for every invalid policy (issue 39)
    ]
    for (const [b, status, code] of cases) {
      const r = await t.request('POST', '/copytrade/master', { token: demo, body: b })
      expect([r.status, r.json.error, b]).toEqual([status, code, b])
    }
    const user = await t.userToken()
    const r = await t.request('POST', '/copytrade/master', { token: user, body: { ...body, login: 100001 } })
    expect([r.status, r.json.error]).toEqual([403, 'INVALID_CUSTOMER_SESSION'])
  })

  test('create, a second on the login, update and delete; customer_id in a body is ignored', async () => {
    const r = await t.request('POST', '/copytrade/master', {
      token: demo,
      body: { ...body, login: 100003, customer_id: 999, public: 1, show_trade_history: 1 },
    })
    expect(r.status).toBe(200)
    expect(r.json).toMatchObject({
      login: 100003,
      currency: 'EUR',
      payout_login: 100003,
      public: 1,
      enabled: 1,
    })
    expect(r.json.customer_id).not.toBe(999)
    const again = await t.request('POST', '/copytrade/master', {
      token: demo,
      body: { ...body, login: 100003 },
    })
    expect([again.status, again.json.error]).toEqual([409, 'MASTER_EXISTS'])
    // another customer may neither change nor delete it
    const foreign = await t.request('PUT', `/copytrade/master/${r.json.id}`, {
      token: master,
      body: { name: 'Mine' },
    })
    expect([foreign.status, foreign.json.error]).toEqual([403, 'PERMISSION_DENIED'])
    expect((await t.request('DELETE', `/copytrade/master/${r.json.id}`, { token: master })).json.error).toBe(
      'PERMISSION_DENIED',
    )
    const up = await t.request('PUT', `/copytrade/master/${r.json.id}`, {
      token: demo,
      body: { description: 'new', reward_policy: { reward_type: 0, amount: 10, period_days: 30 } },
    })
    expect(up.json).toMatchObject({
      description: 'new',
      reward_policy: { reward_type: 0, reward_name: 'SUBSCRIPTION_FEE' },
    })
    // the marketplace lists it; another brand does not see it
    const market = await t.request('GET', '/copytrade/masters?sort=created', { token: master })
    expect(market.json.rows.map((m: { id: number }) => m.id)).toContain(r.json.id)
    expect(market.json.rows[0].login).toBeUndefined()
    const beta = await t.customerToken('beta@example.com', 'beta-pass-1', 'beta.localhost')
    const betaView = await t.request('GET', `/copytrade/masters/${r.json.id}`, {
      token: beta,
      host: 'beta.localhost',
    })
    expect([betaView.status, betaView.json.error]).toEqual([404, 'MASTER_NOT_FOUND'])
    expect((await t.request('DELETE', `/copytrade/master/${r.json.id}`, { token: demo })).status).toBe(200)
    const gone = await t.request('GET', `/copytrade/masters/${r.json.id}`, { token: demo })
    expect(gone.json.error).toBe('MASTER_NOT_FOUND')
  })
})

describe('public trade history and followers (4.12)', () => {
  test('any session sees them while the flag is 1; else the codes; the owner always', async () => {
    const user = await t.userToken()
    const staff = await t.staffToken()
    for (const token of [user, demo, staff]) {
      const r = await t.request('GET', `/copytrade/master/trades?master_id=${masterId}`, { token })
      expect(r.status).toBe(200)
      expect(r.json.currency).toBe('USD')
      expect(
        (await t.request('GET', `/copytrade/master/followers?master_id=${masterId}`, { token })).status,
      ).toBe(200)
    }
    const hide = await t.request('PUT', `/copytrade/master/${masterId}`, {
      token: master,
      body: { show_trade_history: 0, show_followers: 0 },
    })
    expect(hide.status).toBe(200)
    const h = await t.request('GET', `/copytrade/master/trades?master_id=${masterId}`, { token: demo })
    expect([h.status, h.json.error]).toEqual([403, 'TRADE_HISTORY_NOT_PUBLIC'])
    const f = await t.request('GET', `/copytrade/master/followers?master_id=${masterId}`, { token: user })
    expect([f.status, f.json.error]).toEqual([403, 'FOLLOWERS_NOT_PUBLIC'])
    expect(
      (await t.request('GET', `/copytrade/master/trades?master_id=${masterId}`, { token: master })).status,
    ).toBe(200)
    await t.request('PUT', `/copytrade/master/${masterId}`, {
      token: master,
      body: { show_trade_history: 1, show_followers: 1 },
    })
    const missing = await t.request('GET', '/copytrade/master/trades?master_id=99999', { token: demo })
    expect([missing.status, missing.json.error]).toEqual([404, 'MASTER_NOT_FOUND'])
    // a private master shows neither to others (spec 7.5: not public and not owned), whatever its flags
    await t.request('PUT', `/copytrade/master/${masterId}`, { token: master, body: { public: 0 } })
    for (const what of ['trades', 'followers']) {
      const hidden = await t.request('GET', `/copytrade/master/${what}?master_id=${masterId}`, {
        token: user,
      })
      expect([hidden.status, hidden.json.error]).toEqual([403, 'MASTER_NOT_AVAILABLE'])
      const own = await t.request('GET', `/copytrade/master/${what}?master_id=${masterId}`, { token: master })
      expect(own.status).toBe(200)
    }
    await t.request('PUT', `/copytrade/master/${masterId}`, { token: master, body: { public: 1 } })
  })
})

describe('subscriptions (rules 4-8)', () => {
  test('refusals', async () => {
    const sub = (b: Record<string, unknown>, token = demo) =>
      t.request('POST', '/copytrade/subscription', { token, body: { policy_version: 1, ...b } })
    expect((await sub({ follower_login: 100004, master_id: masterId })).json.error).toBe('INVALID_ACCOUNT')
    expect((await sub({ follower_login: 100003, master_id: masterId })).json.error).toBe('FOLLOWER_NOT_FOUND')
    expect((await sub({ follower_login: 100002, master_id: 99999 })).json.error).toBe('MASTER_NOT_FOUND')
    // a private master of another customer
    await t.request('PUT', `/copytrade/master/${masterId}`, { token: master, body: { public: 0 } })
    const priv = await sub({ follower_login: 100002, master_id: masterId })
    expect([priv.status, priv.json.error]).toEqual([403, 'MASTER_NOT_AVAILABLE'])
    // REAL only: the DEMO follower may not (rules 7, 8)
    await t.request('PUT', `/copytrade/master/${masterId}`, {
      token: master,
      body: { public: 1, allowed_follower_modes: 0 },
    })
    const mode = await sub({ follower_login: 100002, master_id: masterId })
    expect([mode.status, mode.json.error]).toEqual([403, 'FOLLOWER_MODE_NOT_ALLOWED'])
    await t.request('PUT', `/copytrade/master/${masterId}`, {
      token: master,
      body: { allowed_follower_modes: 2 },
    })
    const bad = await sub({ follower_login: 100002, master_id: masterId, volume_mode: 0, volume_param: 1.5 })
    expect([bad.status, bad.json.error]).toEqual([400, 'INVALID_DATA'])
    expect(bad.json.message).toStartWith('volume_param')
  })
})

describe('copying driven by quotes', () => {
  let subDemo: number
  let subReal: number

  test('followers in MULTIPLIER and FIXED modes copy an open, a partial close and a close', async () => {
    const f = await t.request('POST', '/copytrade/follower', {
      token: demo,
      body: { login: 100001, defaults: { volume_mode: 0, volume_param: 5 } },
    })
    expect(f.status).toBe(200)
    const a = await t.request('POST', '/copytrade/subscription', {
      token: demo,
      body: {
        follower_login: 100002,
        master_id: masterId,
        policy_version: 1,
        volume_mode: 1,
        volume_param: 1,
        customer_id: 12345,
      },
    })
    expect(a.status).toBe(200)
    expect(a.json).toMatchObject({ status: 0, status_name: 'ACTIVE', volume_mode: 1, max_positions: 10 })
    subDemo = a.json.id
    const b = await t.request('POST', '/copytrade/subscription', {
      token: demo,
      body: { follower_login: 100001, master_id: masterId, policy_version: 1 },
    })
    expect(b.json).toMatchObject({ volume_mode: 0, volume_param: 5 })
    subReal = b.json.id
    const dup = await t.request('POST', '/copytrade/subscription', {
      token: demo,
      body: { follower_login: 100001, master_id: masterId, policy_version: 1 },
    })
    expect([dup.status, dup.json.error]).toEqual([409, 'ALREADY_SUBSCRIBED'])

    const o = await open(100004, masterUser, { cmd: 0, volume: 10, sl: 1.09, tp: 1.12 })
    expect(o.status).toBe(200)
    await t.settle()
    const [d] = await openOf(100002)
    const [r] = await openOf(100001)
    expect([d!.volume, d!.cmd, d!.sl, d!.tp, d!.actor]).toEqual([10, 0, 1.09, 1.12, `copy:${subDemo}`])
    expect([r!.volume, r!.actor]).toEqual([5, `copy:${subReal}`])
    const copies = await t.request('GET', `/copytrade/subscription/${subDemo}/copies`, { token: demo })
    expect(copies.json.rows[0]).toMatchObject({
      action: 'open',
      result: 'copied',
      master_ticket: o.json.order,
      follower_ticket: d!.ticket,
      volume: 10,
    })
    expect(copies.json.rows[0].follower_time_ms).toBeGreaterThanOrEqual(copies.json.rows[0].master_time_ms)

    // the master closes 4 of 10: 100002 closes 4 of 10, 100001 2 of 5 (40 %, rounded down to the step)
    expect(
      (
        await t.request('DELETE', '/trade/close', {
          token: masterUser,
          body: { order: o.json.order, volume: 4 },
        })
      ).status,
    ).toBe(200)
    await t.settle()
    expect((await openOf(100002))[0]!.volume).toBe(6)
    expect((await openOf(100001))[0]!.volume).toBe(3)
    // the links hold the volumes the next part is worked out from
    const parted = await t.ctx.db.select().from(copyLinks).where(eq(copyLinks.masterTicket, o.json.order))
    expect(parted.map((l) => [l.followerLogin, l.masterVolume, l.followerVolume, l.status]).sort()).toEqual([
      [100001, 6, 3, 'open'],
      [100002, 6, 6, 'open'],
    ])
    // the whole rest: both close
    expect(
      (await t.request('DELETE', '/trade/close', { token: masterUser, body: { order: o.json.order } }))
        .status,
    ).toBe(200)
    await t.settle()
    expect(await openOf(100002)).toHaveLength(0)
    expect(await openOf(100001)).toHaveLength(0)
    const links = await t.ctx.db.select().from(copyLinks).where(eq(copyLinks.masterTicket, o.json.order))
    expect(links.map((l) => l.status).sort()).toEqual(['closed', 'closed'])
    // a redelivered event copies nothing more: the relay's deliveries are per (event, consumer), and the
    // link key per (subscription, master position)
    const rows = (await t.request('GET', `/copytrade/subscription/${subDemo}/copies`, { token: demo })).json
      .rows
    expect(rows.map((x: { action: string }) => x.action)).toEqual(['close', 'partial_close', 'open'])
  })

  test('a follower short of margin, a filtered symbol and max positions leave skips with reasons', async () => {
    await t.request('PUT', `/copytrade/subscription/${subReal}`, {
      token: demo,
      body: { volume_param: 100_000 },
    })
    await t.request('PUT', `/copytrade/subscription/${subDemo}`, {
      token: demo,
      body: { symbols_mode: 2, symbols: ['BTCUSD'] },
    })
    const o = await open(100004, masterUser, { cmd: 1, volume: 1, symbol: 'BTCUSD' })
    expect(o.status).toBe(200)
    await t.settle()
    const skips = async (sub: number) =>
      (await t.request('GET', `/copytrade/subscription/${sub}/copies?result=skipped`, { token: demo })).json
        .rows
    expect((await skips(subReal))[0]).toMatchObject({
      action: 'open',
      result: 'skipped',
      reason: 'NOT_ENOUGH_MARGIN',
    })
    expect((await skips(subDemo))[0]).toMatchObject({
      reason: 'SYMBOL_FILTERED',
      master_ticket: o.json.order,
    })
    await t.request('DELETE', '/trade/close', { token: masterUser, body: { order: o.json.order } })
    await t.settle()
  })

  test('reverse with mirrored stops; a close by hand ends the link and a resync never reopens it', async () => {
    await t.request('PUT', `/copytrade/subscription/${subDemo}`, {
      token: demo,
      body: { reverse: 1, symbols_mode: 0 },
    })
    await t.request('POST', `/copytrade/subscription/${subReal}/pause`, { token: demo })
    const o = await open(100004, masterUser, { cmd: 0, volume: 2, sl: 1.09, tp: 1.12 })
    await t.settle()
    const [d] = await openOf(100002)
    expect([d!.cmd, d!.sl, d!.tp]).toEqual([1, 1.12, 1.09])
    const paused = (
      await t.request('GET', `/copytrade/subscription/${subReal}/copies?result=skipped`, { token: demo })
    ).json.rows[0]
    expect(paused).toMatchObject({ reason: 'SUBSCRIPTION_PAUSED', master_ticket: o.json.order })
    const user2 = await t.userToken(100002)
    expect(
      (await t.request('DELETE', '/trade/close', { token: user2, body: { order: d!.ticket } })).status,
    ).toBe(200)
    await t.settle()
    // an update resyncs: the master position is still open, but its ended link keeps it closed
    await t.request('PUT', `/copytrade/subscription/${subDemo}`, { token: demo, body: { max_positions: 9 } })
    await t.settle()
    expect(await openOf(100002)).toHaveLength(0)
    const [link] = await t.ctx.db
      .select()
      .from(copyLinks)
      .where(and(eq(copyLinks.masterTicket, o.json.order), eq(copyLinks.subscriptionId, subDemo)))
    expect([link!.status, link!.reason]).toEqual(['ended', 'CLOSED_CLIENT'])
    // resume copies the master's open position at the current price (the paused subscription had skipped it)
    const resumed = await t.request('POST', `/copytrade/subscription/${subReal}/resume`, { token: demo })
    expect(resumed.json.status_name).toBe('ACTIVE')
    await t.request('PUT', `/copytrade/subscription/${subReal}`, { token: demo, body: { volume_param: 5 } })
    const bad = await t.request('POST', `/copytrade/subscription/${subReal}/resume`, { token: demo })
    expect([bad.status, bad.json.error]).toEqual([409, 'INVALID_TRANSITION'])
    await t.request('DELETE', '/trade/close', { token: masterUser, body: { order: o.json.order } })
    await t.settle()
    await t.request('PUT', `/copytrade/subscription/${subDemo}`, { token: demo, body: { reverse: 0 } })
  })

  test('a REAL copy closed in profit accrues a 20 % share, settled with two TR_REASON_COPY_REWARD operations; a DEMO copy owes the REAL master nothing', async () => {
    const o = await open(100004, masterUser, { cmd: 0, volume: 10 })
    await t.settle()
    const [d] = await openOf(100002)
    const [r] = await openOf(100001)
    expect(d!.volume).toBe(10)
    await quote('EURUSD', 1.11, 1.1102)
    await t.request('DELETE', '/trade/close', { token: masterUser, body: { order: o.json.order } })
    await t.settle()
    const netOf = async (ticket: number) => {
      const [c] = await t.ctx.db.select().from(orders).where(eq(orders.ticket, ticket))
      return c!.profit + c!.commission + c!.storage
    }
    expect(await netOf(d!.ticket)).toBeGreaterThan(0)
    const net = await netOf(r!.ticket)
    expect(net).toBeGreaterThan(0)
    // demo money never becomes real money: the DEMO follower accrued nothing
    const rewardsOf = async (sub: number) =>
      (await t.request('GET', `/copytrade/subscription/${sub}/rewards`, { token: demo })).json.rows
    expect(await rewardsOf(subDemo)).toEqual([])
    const rewards = await rewardsOf(subReal)
    expect(rewards[0]).toMatchObject({ reward_name: 'PROFIT_SHARE_PER_TRADE', status: 'settled', base: net })
    expect(rewards[0].amount).toBe(Math.floor(net * 0.2) / 100)
    const all = await t.ctx.db
      .select()
      .from(balanceOperations)
      .where(eq(balanceOperations.reason, 'TR_REASON_COPY_REWARD'))
    expect(all.some((x) => x.login === 100002)).toBe(false)
    const ops = all.filter((x) => JSON.parse(x.apiData!).copy_reward_accrual_id === rewards[0].id)
    expect(ops.map((x) => [x.login, x.op, x.amount, JSON.parse(x.apiData!).copy_reward_accrual_id])).toEqual([
      [100001, 'OP_BALANCE_OUT', -Math.floor(net * 0.2), rewards[0].id],
      [100004, 'OP_BALANCE_IN', Math.floor(net * 0.2), rewards[0].id],
    ])
    // settling again changes nothing
    const before = all.length
    await t.runJob('copytrade.settle')
    expect(
      await t.ctx.db
        .select()
        .from(balanceOperations)
        .where(eq(balanceOperations.reason, 'TR_REASON_COPY_REWARD')),
    ).toHaveLength(before)
    // the master's statistics moved with its closed trades
    const m = (await t.request('GET', `/copytrade/masters/${masterId}`, { token: demo })).json
    expect(m.stats.trades).toBeGreaterThanOrEqual(4)
    expect(m.followers).toBe(2)
  })

  test('a copy whose master position closed before it opened is skipped MASTER_CLOSED, never opened', async () => {
    let ticket = 0
    // the master's open and close reach the copier together, as under a backlog
    await t.app.relay.whilePaused(async () => {
      ticket = (await open(100004, masterUser, { cmd: 0, volume: 1 })).json.order
      await t.request('DELETE', '/trade/close', { token: masterUser, body: { order: ticket } })
    })
    await t.settle()
    expect(
      await t.ctx.db
        .select()
        .from(orders)
        .where(eq(orders.comment, `copy #${ticket}`)),
    ).toEqual([])
    const links = await t.ctx.db.select().from(copyLinks).where(eq(copyLinks.masterTicket, ticket))
    expect(links.length).toBeGreaterThan(0)
    expect(new Set(links.map((l) => `${l.status} ${l.reason}`))).toEqual(new Set(['skipped MASTER_CLOSED']))
    // and where a copy commits: trading's write port opens nothing against an order that is gone
    const r = await t.ports.get(TradingPort).open({
      brandId: 1,
      actor: `copy:${subReal}`,
      idempotencyKey: `test:${ticket}`,
      login: 100001,
      cmd: 0,
      volume: 1,
      symbol: 'EURUSD',
      sl: 0,
      tp: 0,
      whileOpen: ticket,
    })
    expect(r).toMatchObject({ ok: false, code: 'PARENT_CLOSED' })
  })

  test('manual_trading_mode on the follower account: DISABLED refuses every own trade, ALLOW_NON_COPIED the copies only; a stricter mode binds once accepted, a looser one at once', async () => {
    const user2 = await t.userToken(100002)
    const o = await open(100004, masterUser, { cmd: 0, volume: 1 })
    await t.settle()
    const [copy] = await openOf(100002)
    const setMode = (mode: number) =>
      t.request('PUT', `/copytrade/master/${masterId}`, {
        token: master,
        body: { manual_trading_mode: mode },
      })
    const detail = async () =>
      (await t.request('GET', `/copytrade/subscription/${subDemo}`, { token: demo })).json
    const before = await detail()
    expect([before.terms.manual_trading_mode, before.terms_pending]).toEqual([2, false])
    const stricter = await setMode(0)
    expect(stricter.json.policy_version).toBe(before.terms.version + 1)
    // new terms: until the follower accepts them, its account is its own
    const unbound = await open(100002, user2, { cmd: 0, volume: 1 })
    expect(unbound.status).toBe(200)
    expect(await detail()).toMatchObject({ terms_pending: true, terms: { manual_trading_mode: 2 } })
    const accepted = await t.request('POST', `/copytrade/subscription/${subDemo}/terms`, {
      token: demo,
      body: { version: stricter.json.policy_version },
    })
    expect(accepted.json).toMatchObject({ terms_pending: false, terms: { manual_trading_mode: 0 } })
    const refused = await open(100002, user2, { cmd: 0, volume: 1 })
    expect([refused.status, refused.json.error]).toEqual([403, 'MANUAL_TRADING_DISABLED'])
    // paused (an equity stop pauses too), the subscription binds nothing: the account is its owner's at
    // once, and bound again once resumed (a hostile probe: a pause bound it still, a change took 30 s)
    const move = (action: string) =>
      t.request('POST', `/copytrade/subscription/${subDemo}/${action}`, { token: demo })
    expect((await move('pause')).status).toBe(200)
    const whilePaused = await open(100002, user2, { cmd: 0, volume: 1 })
    expect(whilePaused.status).toBe(200)
    const closedByHand = await t.request('DELETE', '/trade/close', {
      token: user2,
      body: { order: whilePaused.json.order },
    })
    expect(closedByHand.status).toBe(200)
    expect((await move('resume')).status).toBe(200)
    expect((await open(100002, user2, { cmd: 0, volume: 1 })).json.error).toBe('MANUAL_TRADING_DISABLED')
    // a looser mode only frees the follower: it applies at once, with no new version to accept
    const looser = await setMode(1)
    expect(looser.json.policy_version).toBe(stricter.json.policy_version)
    expect(await detail()).toMatchObject({ terms_pending: false, terms: { manual_trading_mode: 1 } })
    const own = await open(100002, user2, { cmd: 0, volume: 1 })
    expect(own.status).toBe(200)
    const closeCopy = await t.request('DELETE', '/trade/close', {
      token: user2,
      body: { order: copy!.ticket },
    })
    expect([closeCopy.status, closeCopy.json.error]).toEqual([403, 'MANUAL_TRADING_DISABLED'])
    const modifyCopy = await t.request('PUT', '/trade/modify', {
      token: user2,
      body: { order: copy!.ticket, sl: 1, tp: 0 },
    })
    expect(modifyCopy.json.error).toBe('MANUAL_TRADING_DISABLED')
    for (const order of [own.json.order, unbound.json.order])
      expect((await t.request('DELETE', '/trade/close', { token: user2, body: { order } })).status).toBe(200)
    await setMode(2)
    // back to ALLOW_ALL, then stricter again: the follower accepted ALLOW_ALL, so it trades freely
    const again = await setMode(0)
    expect(again.json.policy_version).toBe(stricter.json.policy_version + 1)
    const free = await open(100002, user2, { cmd: 0, volume: 1 })
    expect(free.status).toBe(200)
    expect(
      (await t.request('DELETE', '/trade/close', { token: user2, body: { order: free.json.order } })).status,
    ).toBe(200)
    await setMode(2)
    await t.request('DELETE', '/trade/close', { token: masterUser, body: { order: o.json.order } })
    await t.settle()
    expect(await openOf(100002)).toHaveLength(0)
  })

  test("a master's close: a refused copy close is recorded and retried; one closed meanwhile ends CLOSED_ELSEWHERE", async () => {
    const o = await open(100004, masterUser, { cmd: 0, volume: 10 })
    expect(o.status).toBe(200)
    await t.settle()
    const [d] = await openOf(100002)
    const [r] = await openOf(100001)
    const staff = await t.staffToken()
    const ro = await t.request('PATCH', '/manager/accounts/100001', {
      token: staff,
      body: { enable_read_only: 1 },
    })
    expect(ro.status).toBe(200)
    // both closes go in one batch: 100002's copy closes, 100001's is refused (read-only) and stays closing
    expect(
      (await t.request('DELETE', '/trade/close', { token: masterUser, body: { order: o.json.order } }))
        .status,
    ).toBe(200)
    await t.settle()
    const linkOf = async (login: number) =>
      (await t.ctx.db.select().from(copyLinks).where(eq(copyLinks.masterTicket, o.json.order))).find(
        (l) => l.followerLogin === login,
      )!
    const records = async (linkId: number) =>
      (await t.ctx.db.select().from(copyRecords).where(eq(copyRecords.linkId, linkId)))
        .filter((x) => x.action === 'close')
        .map((x) => [x.key, x.result, x.reason, x.followerTicket])
    const closed = await linkOf(100002)
    expect(closed.status).toBe('closed')
    expect(await records(closed.id)).toEqual([[`close:${closed.id}`, 'copied', '', d!.ticket]])
    const refused = await linkOf(100001)
    expect(refused.status).toBe('closing')
    expect(await records(refused.id)).toEqual([
      [`close-skip:${refused.id}`, 'skipped', 'ACCOUNT_DISABLED', r!.ticket],
    ])
    expect((await openOf(100001)).map((x) => x.ticket)).toEqual([r!.ticket])
    // the follower closes it by hand before the retry: the retry finds it gone and ends the link
    await t.request('PATCH', '/manager/accounts/100001', { token: staff, body: { enable_read_only: 0 } })
    const own = await t.userToken(100001)
    expect(
      (await t.request('DELETE', '/trade/close', { token: own, body: { order: r!.ticket } })).status,
    ).toBe(200)
    await t.settle()
    expect((await linkOf(100001)).status).toBe('closing')
    await t.ctx.db.update(copyLinks).set({ updatedAt: 0, leaseUntil: 0 }).where(eq(copyLinks.id, refused.id))
    await t.runJob('copytrade.reconcile')
    expect([(await linkOf(100001)).status, (await linkOf(100001)).reason]).toEqual([
      'ended',
      'CLOSED_ELSEWHERE',
    ])
    expect(await records(refused.id)).toEqual([
      [`close-skip:${refused.id}`, 'skipped', 'ACCOUNT_DISABLED', r!.ticket],
      [`close:${refused.id}`, 'skipped', 'CLOSED_ELSEWHERE', r!.ticket],
    ])
  })

  test("one copy's close failing leaves the others closed; the reconcile job closes it later", async () => {
    const o = await open(100004, masterUser, { cmd: 0, volume: 10 })
    await t.settle()
    expect(await openOf(100002)).toHaveLength(1)
    const [r] = await openOf(100001)
    const port = t.ports.get(TradingPort)
    const close = port.close
    // the connection drops on 100001's close, once
    let dropped = 0
    port.close = async (req) => {
      if (req.order === r!.ticket && dropped++ === 0) throw new Error('connection lost')
      return close(req)
    }
    try {
      expect(
        (await t.request('DELETE', '/trade/close', { token: masterUser, body: { order: o.json.order } }))
          .status,
      ).toBe(200)
      await t.settle()
    } finally {
      port.close = close
    }
    expect(dropped).toBe(1)
    const links = async () =>
      (await t.ctx.db.select().from(copyLinks).where(eq(copyLinks.masterTicket, o.json.order)))
        .map((l) => [l.followerLogin, l.status])
        .sort()
    expect(await links()).toEqual([
      [100001, 'closing'],
      [100002, 'closed'],
    ])
    expect(await openOf(100002)).toHaveLength(0)
    expect((await openOf(100001)).map((x) => x.ticket)).toEqual([r!.ticket])
    await t.ctx.db
      .update(copyLinks)
      .set({ updatedAt: 0, leaseUntil: 0 })
      .where(eq(copyLinks.followerTicket, r!.ticket))
    await t.runJob('copytrade.reconcile')
    expect(await links()).toEqual([
      [100001, 'closed'],
      [100002, 'closed'],
    ])
    expect(await openOf(100001)).toHaveLength(0)
  })

  test('disable closes the copies; ownership and brand probes', async () => {
    const o = await open(100004, masterUser, { cmd: 0, volume: 3 })
    await t.settle()
    expect(await openOf(100002)).toHaveLength(1)
    const other = await t.request('POST', `/copytrade/subscription/${subDemo}/disable`, { token: master })
    expect([other.status, other.json.error]).toEqual([403, 'PERMISSION_DENIED'])
    const off = await t.request('POST', `/copytrade/subscription/${subDemo}/disable`, { token: demo })
    expect(off.json.status_name).toBe('DISABLED')
    await t.settle()
    expect(await openOf(100002)).toHaveLength(0)
    const beta = await t.customerToken('beta@example.com', 'beta-pass-1', 'beta.localhost')
    const probe = await t.request('GET', `/copytrade/subscription/${subReal}`, {
      token: beta,
      host: 'beta.localhost',
    })
    expect([probe.status, probe.json.error]).toEqual([404, 'SUBSCRIPTION_NOT_FOUND'])
    const staff = await t.staffToken()
    const list = await t.request('GET', `/manager/copytrade/subscriptions?master_id=${masterId}`, {
      token: staff,
    })
    expect(list.json.rows.length).toBe(2)
    const dis = await t.request('POST', `/manager/copytrade/masters/${masterId}/disable`, {
      token: staff,
      body: { reason: 'review', end_subscriptions: true },
    })
    expect(dis.json).toMatchObject({ enabled: 0, blocked_reason: 'review' })
    await t.settle()
    expect(await openOf(100001)).toHaveLength(0)
    const back = await t.request('PUT', `/copytrade/master/${masterId}`, {
      token: master,
      body: { enabled: 1 },
    })
    expect([back.status, back.json.error]).toEqual([403, 'MASTER_NOT_AVAILABLE'])
    await t.request('DELETE', '/trade/close', { token: masterUser, body: { order: o.json.order } })
  })
})
