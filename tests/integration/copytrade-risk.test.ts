// Copy trading's guards and modes driven by quotes (issue 31): the signal's age, the slippage guard, the
// daily loss limit until the next UTC day, OPEN_ONLY and CLOSE_ONLY, BALANCE_RATIO sizing. The relay is
// held while time or prices move, as after a failover or a burst of ticks.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { and, eq } from 'drizzle-orm'
import { ManualClock } from '../../src/kernel/clock'
import { copyLinks } from '../../src/modules/copytrade/schema'
import { orders } from '../../src/modules/trading/schema'
import { makeTestApp, type TestApp } from '../support/app'

const clock = new ManualClock(Date.UTC(2026, 10, 24, 9, 0, 0))
let t: TestApp
let demo: string
let dealer: string
let masterUser: string
let masterId: number
let sub: number
let mid = 1.1

const quote = async (bid: number) => {
  mid = bid
  const r = await t.request('POST', '/market/quotes', {
    token: dealer,
    body: { ticks: [{ symbol: 'EURUSD', bid, ask: Math.round((bid + 0.0002) * 1e5) / 1e5 }] },
  })
  expect(r.status).toBe(200)
}
const masterOpen = async (cmd = 0, volume = 10) => {
  const r = await t.request('POST', '/trade/open', {
    token: masterUser,
    body: { login: 100004, cmd, volume, symbol: 'EURUSD', sl: 0, tp: 0 },
  })
  expect(r.status).toBe(200)
  return r.json.order as number
}
const masterClose = async (order: number) => {
  expect((await t.request('DELETE', '/trade/close', { token: masterUser, body: { order } })).status).toBe(200)
  await t.settle()
}
const settings = (body: object) => t.request('PUT', `/copytrade/subscription/${sub}`, { token: demo, body })
const lastRecord = async () =>
  (await t.request('GET', `/copytrade/subscription/${sub}/copies?limit=1`, { token: demo })).json.rows[0]
const copyOf = async (ticket: number) =>
  (
    await t.ctx.db
      .select()
      .from(copyLinks)
      .where(and(eq(copyLinks.masterTicket, ticket), eq(copyLinks.subscriptionId, sub)))
  )[0]!

beforeAll(async () => {
  t = await makeTestApp({ clock })
  demo = await t.customerToken()
  dealer = await t.staffToken(3, 'dealer-pass-1')
  masterUser = await t.userToken(100004, 'master-pass-1')
  await quote(1.1)
  masterId = (await t.request('GET', '/copytrade/masters', { token: demo })).json.rows[0].id
  const r = await t.request('POST', '/copytrade/subscription', {
    token: demo,
    body: {
      follower_login: 100002,
      master_id: masterId,
      policy_version: (await t.request('GET', `/copytrade/masters/${masterId}`, { token: demo })).json
        .policy_version,
      volume_mode: 1,
      volume_param: 1,
    },
  })
  expect(r.status).toBe(200)
  sub = r.json.id
})
afterAll(() => t.close())

describe('guards', () => {
  test('an open signal older than open_ttl_seconds is not copied (SIGNAL_TOO_OLD); its close is', async () => {
    await settings({ open_ttl_seconds: 30 })
    let ticket = 0
    await t.app.relay.whilePaused(async () => {
      ticket = await masterOpen()
      clock.advance(45_000)
      await quote(mid)
    })
    await t.settle()
    expect(await lastRecord()).toMatchObject({
      action: 'open',
      result: 'skipped',
      reason: 'SIGNAL_TOO_OLD',
      master_ticket: ticket,
    })
    await masterClose(ticket)
    await settings({ open_ttl_seconds: 60 })
  })

  test('a price more than max_slippage_points worse than the master fill is skipped (SLIPPAGE)', async () => {
    await settings({ max_slippage_points: 10 })
    let ticket = 0
    await t.app.relay.whilePaused(async () => {
      ticket = await masterOpen()
      await quote(mid + 0.0005) // 50 points up before the copier looks
    })
    await t.settle()
    expect(await lastRecord()).toMatchObject({ reason: 'SLIPPAGE', master_ticket: ticket })
    await masterClose(ticket)
    // within the guard: copied, with its slippage recorded
    await t.app.relay.whilePaused(async () => {
      ticket = await masterOpen()
      await quote(mid + 0.00005) // 5 points
    })
    await t.settle()
    const r = await lastRecord()
    expect(r).toMatchObject({ result: 'copied', master_ticket: ticket })
    expect(r.slippage_points).toBe(5)
    expect(r.slippage).toBeCloseTo(0.5, 6) // 0.10 lot = 10,000 EUR x 0.00005 USD
    await masterClose(ticket)
    await settings({ max_slippage_points: 0 })
  })

  test('the daily loss limit halts new copies until the next UTC day', async () => {
    await settings({ daily_loss_limit: 5 })
    const ticket = await masterOpen(0, 10)
    await t.settle()
    await quote(mid - 0.01) // 0.10 lot, 100 points down: about -100 USD
    await masterClose(ticket)
    const next = await masterOpen()
    await t.settle()
    expect(await lastRecord()).toMatchObject({ reason: 'DAILY_LOSS_LIMIT', master_ticket: next })
    await masterClose(next)
    clock.advance(24 * 3_600_000)
    // sessions last 12 hours: sign in again
    demo = await t.customerToken()
    dealer = await t.staffToken(3, 'dealer-pass-1')
    masterUser = await t.userToken(100004, 'master-pass-1')
    await quote(mid)
    const tomorrow = await masterOpen()
    await t.settle()
    expect(await lastRecord()).toMatchObject({ result: 'copied', master_ticket: tomorrow })
    await masterClose(tomorrow)
    await settings({ daily_loss_limit: 0 })
  })
})

describe('modes', () => {
  test('OPEN_ONLY leaves the copy open when the master closes; CLOSE_ONLY opens nothing but closes what it holds', async () => {
    await settings({ copy_mode: 1 })
    const a = await masterOpen()
    await t.settle()
    const copy = await copyOf(a)
    expect(copy.status).toBe('open')
    await masterClose(a)
    expect((await copyOf(a)).status).toBe('ended')
    const [stays] = await t.ctx.db.select().from(orders).where(eq(orders.ticket, copy.followerTicket!))
    expect(stays!.state).toBe('open')
    // CLOSE_ONLY: a copy made in FULL_SYNC is closed with the master; a new open is not copied
    await settings({ copy_mode: 0 })
    const b = await masterOpen()
    await t.settle()
    await settings({ copy_mode: 2 })
    const c = await masterOpen()
    await t.settle()
    expect((await copyOf(c)).reason).toBe('COPY_MODE')
    await masterClose(b)
    expect((await copyOf(b)).status).toBe('closed')
    await masterClose(c)
    await settings({ copy_mode: 0 })
  })

  test('BALANCE_RATIO: 100002 holds 10,000, the master 25,000: a master 0.10 lot is copied as 0.04', async () => {
    const bal = async (login: number) =>
      (await t.request('GET', `/manager/accounts/${login}`, { token: await t.staffToken() })).json
        .balance as number
    await settings({ volume_mode: 3, volume_param: 1 })
    const ticket = await masterOpen(0, 10)
    await t.settle()
    const link = await copyOf(ticket)
    expect(link.followerVolume).toBe(Math.floor((10 * (await bal(100002))) / (await bal(100004))))
    await masterClose(ticket)
  })
})

describe('pending orders', () => {
  const place = async (cmd: number, price: number) => {
    const r = await t.request('POST', '/trade/open', {
      token: masterUser,
      body: { login: 100004, cmd, volume: 10, symbol: 'EURUSD', sl: 0, tp: 0, open_price: price },
    })
    expect(r.status).toBe(200)
    await t.settle()
    return r.json.order as number
  }
  const follower = async (ticket: number) =>
    (
      await t.ctx.db
        .select()
        .from(orders)
        .where(eq(orders.ticket, (await copyOf(ticket)).followerTicket!))
    )[0]!

  test('a BUY_LIMIT is copied at its price; both trigger on the tick; the master close closes the copy', async () => {
    await settings({ volume_mode: 1, volume_param: 1 })
    await quote(1.1)
    const ticket = await place(2, 1.095)
    const copy = await follower(ticket)
    expect([copy.cmd, copy.state, copy.openPrice, copy.volume]).toEqual([2, 'pending', 1.095, 10])
    await quote(1.0948)
    await t.settle()
    expect((await follower(ticket)).state).toBe('open')
    await masterClose(ticket)
    expect((await copyOf(ticket)).status).toBe('closed')
    expect((await follower(ticket)).state).toBe('closed')
  })

  test("the master's cancel cancels the copy; a copy still pending when the master's position closes is cancelled", async () => {
    await quote(1.1)
    const ticket = await place(3, 1.105) // SELL_LIMIT above
    expect((await follower(ticket)).state).toBe('pending')
    expect(
      (await t.request('DELETE', '/trade/cancel', { token: masterUser, body: { order: ticket } })).status,
    ).toBe(200)
    await t.settle()
    expect([(await copyOf(ticket)).status, (await follower(ticket)).state]).toEqual(['closed', 'cancelled'])
  })
})
