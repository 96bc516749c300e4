// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
// Findings of the scripts/notifications probe on price alerts: a repeat alert fired again for the same price
// episode once an edit of its message had moved updated_at and it was filed again (a restart, a takeover,
// its account disabled and enabled), and an alert whose symbol is hidden from the group could not be
// disabled (PUT with active 0 re-ran the symbol checks of a new alert).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { ManualClock } from '../../src/kernel/clock'
import { priceAlerts } from '../../src/modules/alerts/schema'
import { makeTestApp, type TestApp } from '../support/app'
import { quoteIngest } from '../support/quotes'

// one app for the findings below: each test makes its own alerts, from a price of its own
const clock = new ManualClock(Date.UTC(2026, 0, 5, 12, 0, 0))
let t: TestApp
let dealer: string
let user: string
let manager: string
const ingest = quoteIngest(
  () => t,
  clock,
  () => dealer,
)
const bid = (p: number) => ingest([{ symbol: 'EURUSD', bid: p, ask: Math.round((p + 0.0001) * 1e5) / 1e5 }])
const row = async (id: number) =>
  (await t.ctx.db.select().from(priceAlerts).where(eq(priceAlerts.id, id)))[0]!
/**
 * Staff disable and enable the account: its alerts are filed again, as at a start or a takeover (the
 * disable ends the user's sessions: a new one is signed in).
 */
const refile = async () => {
  for (const enable of [0, 1]) {
    const r = await t.request('PATCH', '/manager/accounts/100001', { token: manager, body: { enable } })
    expect(r.status).toBe(200)
    await t.settle()
  }
  user = await t.userToken(100001)
}

beforeAll(async () => {
  t = await makeTestApp({ clock })
  dealer = await t.staffToken(3, 'dealer-pass-1')
  user = await t.userToken(100001)
  manager = await t.staffToken()
})
afterAll(() => t.close())

describe('finding 2: a repeat alert edited after it fired, then filed again', () => {
  test('a repeat level alert whose message was edited after it fired does not fire again for the same episode after a reload', async () => {
    await bid(1.19)
    const body = {
      login: 100001,
      symbol: 'EURUSD',
      side: 0,
      condition: 0,
      target_price: 1.2,
      repeat_mode: 1,
      message: 'one',
    }
    const c = await t.request('POST', '/price_alert', { token: user, body })
    expect(c.status).toBe(200)
    await bid(1.21)
    await t.settle()
    expect((await row(c.json.id)).firedCount).toBe(1)
    // a new message only: same watch, the live engine keeps the alert waiting for its reset
    clock.advance(5000)
    const e = await t.request('PUT', `/price_alert/${c.json.id}`, {
      token: user,
      body: { ...body, message: 'two' },
    })
    expect(e.status).toBe(200)
    // the price stays above 1.2 (the same episode); the rest ends
    clock.advance(61_000)
    await bid(1.211)
    await t.settle()
    expect((await row(c.json.id)).firedCount).toBe(1)
    await refile()
    await bid(1.212)
    await t.settle()
    expect((await row(c.json.id)).firedCount).toBe(1)
    // the episode ends (the price leaves the region) and a new one fires
    await bid(1.195)
    await bid(1.205)
    await t.settle()
    expect((await row(c.json.id)).firedCount).toBe(2)
    await t.request('DELETE', `/price_alert/${c.json.id}`, { token: user })
  })

  test('one edited after it fired to a level its firing price is outside of is a new alert after a reload', async () => {
    clock.advance(120_000)
    await bid(1.19)
    const body = { login: 100001, symbol: 'EURUSD', side: 0, condition: 0, target_price: 1.2, repeat_mode: 1 }
    const c = await t.request('POST', '/price_alert', { token: user, body })
    expect(c.status).toBe(200)
    await bid(1.21)
    await t.settle()
    expect((await row(c.json.id)).firedCount).toBe(1)
    // the level moves above the firing's price, which the price then reaches during the rest
    clock.advance(5000)
    const e = await t.request('PUT', `/price_alert/${c.json.id}`, {
      token: user,
      body: { ...body, target_price: 1.22 },
    })
    expect(e.status).toBe(200)
    await bid(1.225)
    await t.settle()
    expect((await row(c.json.id)).firedCount).toBe(1)
    // filed again before the rest ends: armed as the new alert it is, it fires once the rest is over
    await refile()
    clock.advance(61_000)
    await bid(1.226)
    await t.settle()
    expect((await row(c.json.id)).firedCount).toBe(2)
    await t.request('DELETE', `/price_alert/${c.json.id}`, { token: user })
  })
})

describe('finding 5: disabling an alert whose symbol is hidden from the group', () => {
  let t: TestApp
  beforeAll(async () => {
    t = await makeTestApp()
  })
  afterAll(() => t.close())

  test('PUT /price_alert/{id} with active 0 disables an alert whose symbol is hidden from the group', async () => {
    const admin = await t.staffToken(2, 'admin-pass-1')
    const user = await t.userToken(100001)
    const body = { login: 100001, symbol: 'EURUSD', side: 0, condition: 0, target_price: 1.5, message: 'm' }
    const c = await t.request('POST', '/price_alert', { token: user, body })
    expect(c.status).toBe(200)
    const moving = {
      login: 100001,
      symbol: 'EURUSD',
      side: 0,
      condition: 7,
      move_threshold: 2,
      reference_price: 1.1,
      reference_time: 1767614400,
    }
    const m = await t.request('POST', '/price_alert', { token: user, body: moving })
    expect(m.status).toBe(200)
    const groups = await t.request('GET', '/manager/groups', { token: admin })
    const usd = groups.json.rows.find((g: { name: string }) => g.name === 'real\\USD')
    const hide = await t.request('PUT', `/manager/groups/${usd.id}/securities/Forex`, {
      token: admin,
      body: { show: 0, trade: 0, lot_min: 1, lot_max: 10000, lot_step: 1, comm_base: 0, comm_type: 0 },
    })
    expect(hide.status).toBe(200)
    await Bun.sleep(1200)
    const off = await t.request('PUT', `/price_alert/${c.json.id}`, {
      token: user,
      body: { ...body, active: 0 },
    })
    expect(off.status).toBe(200)
    expect(off.json.alert.active).toBe(0)
    expect(off.json.alert.target_price).toBe(1.5)
    // a disable may carry a new message or expiry (they need no symbol settings)
    const offM = await t.request('PUT', `/price_alert/${m.json.id}`, {
      token: user,
      body: { ...moving, message: 'off', active: 0 },
    })
    expect(offM.status).toBe(200)
    expect(offM.json.alert).toMatchObject({ active: 0, message: 'off', reference_price: 1.1 })
    // a disable that changes what the alert watches is a new definition: the symbol must be available
    const moved = await t.request('PUT', `/price_alert/${c.json.id}`, {
      token: user,
      body: { ...body, target_price: 1.6, active: 0 },
    })
    expect(moved.status).toBe(400)
    expect(moved.json.error).toBe('INVALID_DATA')
    expect(moved.json.message).toContain('symbol')
    // enabling it again needs the symbol
    const on = await t.request('PUT', `/price_alert/${c.json.id}`, { token: user, body })
    expect(on.status).toBe(400)
    expect(on.json.message).toContain('symbol')
  })
})

// Review of 44e7b91: whether a reloaded repeat alert fired for its episode was its last firing's price in
// the region it watches now, so an edit that moved its level but still covered that price (or activated it
// again) was filed as waiting for its reset after a reload, where the live engine had made it a new alert.
// The column watch_changed_at (migration 0051) records when what it watches last changed.
describe('review: an alert re-armed by an edit, then filed again before a tick', () => {
  test('an edit that moves the level (the firing price still inside) is a new alert after a reload too', async () => {
    await bid(1.19)
    const body = { login: 100001, symbol: 'EURUSD', side: 0, condition: 0, target_price: 1.2, repeat_mode: 1 }
    const c = await t.request('POST', '/price_alert', { token: user, body })
    expect(c.status).toBe(200)
    await bid(1.25)
    await t.settle()
    expect((await row(c.json.id)).firedCount).toBe(1)
    // the trader moves the level to 1.22 (a new alert: "a change of what it watches re-arms it")
    clock.advance(70_000)
    const e = await t.request('PUT', `/price_alert/${c.json.id}`, {
      token: user,
      body: { ...body, target_price: 1.22 },
    })
    expect(e.status).toBe(200)
    // no tick meanwhile (market closed); the alert is filed again
    await refile()
    await bid(1.251)
    await t.settle()
    expect((await row(c.json.id)).firedCount).toBe(2)
    await t.request('DELETE', `/price_alert/${c.json.id}`, { token: user })
  })

  test('a fired once-alert activated again as a repeat one is a new alert after a reload', async () => {
    clock.advance(120_000)
    await bid(1.19)
    const body = { login: 100001, symbol: 'EURUSD', side: 0, condition: 0, target_price: 1.2, repeat_mode: 0 }
    const c = await t.request('POST', '/price_alert', { token: user, body })
    expect(c.status).toBe(200)
    await bid(1.25)
    await t.settle()
    expect(await row(c.json.id)).toMatchObject({ firedCount: 1, active: 0 })
    clock.advance(70_000)
    const e = await t.request('PUT', `/price_alert/${c.json.id}`, {
      token: user,
      body: { ...body, repeat_mode: 1 },
    })
    expect(e.status).toBe(200)
    await refile()
    await bid(1.252)
    await t.settle()
    expect((await row(c.json.id)).firedCount).toBe(2)
    await t.request('DELETE', `/price_alert/${c.json.id}`, { token: user })
  })

  test('a repeat alert disabled and enabled again after it fired is a new alert after a reload, as live', async () => {
    clock.advance(120_000)
    await bid(1.19)
    const body = { login: 100001, symbol: 'EURUSD', side: 0, condition: 0, target_price: 1.2, repeat_mode: 1 }
    const c = await t.request('POST', '/price_alert', { token: user, body })
    expect(c.status).toBe(200)
    await bid(1.25)
    await t.settle()
    expect((await row(c.json.id)).firedCount).toBe(1)
    clock.advance(70_000)
    for (const active of [0, 1]) {
      const e = await t.request('PUT', `/price_alert/${c.json.id}`, {
        token: user,
        body: { ...body, active },
      })
      expect(e.status).toBe(200)
    }
    // without a reload the engine files it afresh (off the books while disabled): the next tick fires it
    await bid(1.253)
    await t.settle()
    expect((await row(c.json.id)).firedCount).toBe(2)
    clock.advance(70_000)
    for (const active of [0, 1]) {
      const e = await t.request('PUT', `/price_alert/${c.json.id}`, {
        token: user,
        body: { ...body, active },
      })
      expect(e.status).toBe(200)
    }
    await refile()
    await bid(1.254)
    await t.settle()
    expect((await row(c.json.id)).firedCount).toBe(3)
    await t.request('DELETE', `/price_alert/${c.json.id}`, { token: user })
  })

  test('a new message after a firing (what it watches kept) still waits for its reset after a reload', async () => {
    clock.advance(120_000)
    await bid(1.19)
    const body = { login: 100001, symbol: 'EURUSD', side: 0, condition: 0, target_price: 1.2, repeat_mode: 1 }
    const c = await t.request('POST', '/price_alert', { token: user, body })
    expect(c.status).toBe(200)
    await bid(1.25)
    await t.settle()
    const fired = await row(c.json.id)
    expect(fired.firedCount).toBe(1)
    clock.advance(70_000)
    const e = await t.request('PUT', `/price_alert/${c.json.id}`, {
      token: user,
      body: { ...body, message: 'x' },
    })
    expect(e.status).toBe(200)
    expect((await row(c.json.id)).watchChangedAt).toBe(fired.watchChangedAt)
    await refile()
    await bid(1.255)
    await t.settle()
    expect((await row(c.json.id)).firedCount).toBe(1)
    await t.request('DELETE', `/price_alert/${c.json.id}`, { token: user })
  })
})
