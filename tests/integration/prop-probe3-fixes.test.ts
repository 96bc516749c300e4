// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { ManualClock } from '../../src/kernel/clock'
import { makeTestApp, type TestApp } from '../support/app'
import { buyChallenge, evaluationProgram } from '../support/prop'
import { quoteIngest } from '../support/quotes'

/**
 * Findings of a third hostile probe of the prop module: a phase the evaluator failed (a time limit) kept
 * its open positions on an account nobody may trade any more, where a live breach closes them all.
 */

const DAY = 86_400_000
const clock = new ManualClock(Date.UTC(2026, 10, 23, 9, 0, 0))
let t: TestApp
let customer: string
let manager: string
let dealer: string
const ingest = quoteIngest(
  () => t,
  clock,
  () => dealer,
)

beforeAll(async () => {
  t = await makeTestApp({ clock })
  await signIn()
  await ingest([{ symbol: 'EURUSD', bid: 1.1, ask: 1.1002 }])
})
afterAll(() => t.close())

async function signIn() {
  customer = await t.customerToken()
  manager = await t.staffToken()
  dealer = await t.staffToken(3, 'dealer-pass-1')
}

const openOrders = async (login: number) =>
  Number(
    (
      await t.ctx.db.execute({
        sql: 'select count(*) as n from orders where login = ? and close_time = 0 and cmd in (0, 1)',
        args: [login],
      })
    ).rows[0]!.n,
  )

const closeReason = async (order: number) =>
  (await t.ctx.db.execute({ sql: 'select close_reason from orders where ticket = ?', args: [order] })).rows[0]
    ?.close_reason

/** A challenge of a one-day program with one position open. */
async function challengeWithPosition(name: string) {
  const created = await t.request('POST', '/manager/prop/programs', {
    token: manager,
    body: evaluationProgram(
      { profit_target_pct: 50, daily_loss_pct: 5, total_loss_pct: 10, max_trading_days: 1 },
      { name },
    ),
  })
  expect(created.status).toBe(200)
  const c = await buyChallenge(t, customer, created.json.id)
  await t.runJob('prop.evaluate')
  const o = await t.request('POST', '/trade/open', {
    token: c.token,
    body: { login: c.login, cmd: 0, volume: 10, symbol: 'EURUSD', sl: 0, tp: 0 },
  })
  expect(o.status).toBe(200)
  await t.runJob('prop.evaluate')
  return { ...c, order: Number(o.json.order) }
}

/** Ticks for the engine, each after the bus entries of the moment are read. */
async function ticks(n: number) {
  for (let i = 0; i < n; i++) {
    clock.advance(1000)
    const bid = 1.1002 + Math.random() * 0.0001
    await ingest([{ symbol: 'EURUSD', bid, ask: bid + 0.0002 }])
    await t.app.relay.drain()
  }
}

test('a phase failed by the evaluator (time limit) has its open positions closed, as a live breach does', async () => {
  const c = await challengeWithPosition('One day')
  clock.advance(2 * DAY)
  await signIn()
  await ingest([{ symbol: 'EURUSD', bid: 1.1001, ask: 1.1003 }])
  await t.runJob('prop.evaluate')
  const d = (await t.request('GET', `/prop/challenges/${c.challenge}`, { token: customer })).json
  expect(d.challenge.status_name).toBe('failed')
  expect(d.latest_breach).toMatchObject({ rule: 'max_trading_days' })
  // the engine gets PHASES_CHANGED and the next ticks
  await ticks(3)
  expect(await openOrders(c.login)).toBe(0)
  expect(await closeReason(c.order)).toBe('risk_limit')
}, 60_000)

test("a failed phase whose PHASES_CHANGED was lost is closed out by the engine's periodic pass", async () => {
  const c = await challengeWithPosition('One day, lost signal')
  // failed as the evaluator's breach leaves it, but no bus entry reaches the engine
  const now = clock.now()
  await t.ctx.db.execute({
    sql: 'update prop_phases set status = 3, end_time = ?, updated_at = ? where account_login = ?',
    args: [now, now, c.login],
  })
  await t.ctx.db.execute({
    sql: "update accounts set enable_read_only = 1, read_only_reason = 'challenge failed' where login = ?",
    args: [c.login],
  })
  await ticks(2)
  // the watch still holds it as active, and its loss limits are far
  expect(await openOrders(c.login)).toBe(1)
  await t.runJob('prop.closeouts')
  await ticks(2)
  expect(await openOrders(c.login)).toBe(0)
  expect(await closeReason(c.order)).toBe('risk_limit')
}, 60_000)

/** The challenge's account signed in again (its session from the purchase may be over days later). */
const signInAccount = async (login: number) =>
  (await t.request('POST', '/sign/in', { body: { login, password: 'challenge-pass-1' } })).json
    .__token as string

/** Fails the challenge of a one-day program by its time limit and lets the engine close out its positions. */
async function failByTimeLimit(login: number) {
  clock.advance(2 * DAY)
  await signIn()
  await ingest([{ symbol: 'EURUSD', bid: 1.1001, ask: 1.1003 }])
  await t.runJob('prop.evaluate')
  await ticks(3)
  expect(await openOrders(login)).toBe(0)
  // the periodic pass finds it without positions
  await t.runJob('prop.closeouts')
}

test("a pending order of a failed phase's account that reaches its price is cancelled, not filled: no position appears after the close-out", async () => {
  const c = await challengeWithPosition('One day, pending order')
  const placed = await t.request('POST', '/trade/open', {
    token: c.token,
    body: { login: c.login, cmd: 2, volume: 10, symbol: 'EURUSD', open_price: 1.09, sl: 0, tp: 0 },
  })
  expect(placed.status).toBe(200)
  await failByTimeLimit(c.login)
  // the price reaches the buy limit on the read-only account
  clock.advance(1000)
  await ingest([{ symbol: 'EURUSD', bid: 1.0885, ask: 1.0887 }])
  await t.app.relay.drain()
  const pending = (
    await t.ctx.db.execute({
      sql: 'select state, close_reason from orders where ticket = ?',
      args: [Number(placed.json.order)],
    })
  ).rows[0]
  expect({ state: pending?.state, reason: pending?.close_reason }).toEqual({
    state: 'cancelled',
    reason: 'trade_disabled',
  })
  expect(await openOrders(c.login)).toBe(0)
  await ingest([{ symbol: 'EURUSD', bid: 1.1001, ask: 1.1003 }])
}, 60_000)

test('a failed phase found without positions is not looked at again by the periodic pass: a position its account takes after a manager lifted read-only is left open', async () => {
  const c = await challengeWithPosition('One day, lifted')
  await failByTimeLimit(c.login)
  const lifted = await t.request('PATCH', `/manager/accounts/${c.login}`, {
    token: manager,
    body: { enable_read_only: 0 },
  })
  expect(lifted.status).toBe(200)
  const o = await t.request('POST', '/trade/open', {
    token: await signInAccount(c.login),
    body: { login: c.login, cmd: 0, volume: 10, symbol: 'EURUSD', sl: 0, tp: 0 },
  })
  expect(o.status).toBe(200)
  // the manager's decision: the engine's pass closes out lost signals, not this
  await t.runJob('prop.closeouts')
  await ticks(2)
  expect(await openOrders(c.login)).toBe(1)
}, 60_000)
