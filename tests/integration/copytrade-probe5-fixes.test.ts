// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
// Findings of the fifth copy trading probe (.tmp/probe-copy5): a copy decided but not yet opened is not
// opened once its master is disabled or its follower copies closes only; a deposit parked in dead letters
// is not allocated twice; two settings changes at once are both kept; a settings change committed while a
// copy is in flight is what the copy is decided on.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import type { Tx } from '../../src/kernel/db/client'
import { BalanceOperation } from '../../src/modules/accounts'
import { FLOW_CONSUMER } from '../../src/modules/copytrade/copier/holds'
import { copyLinks, copySubscriptions } from '../../src/modules/copytrade/schema'
import { TradingPort } from '../../src/modules/trading'
import { copyFeeWorld } from '../support/copy-fees'

let w: Awaited<ReturnType<typeof copyFeeWorld>>
beforeAll(async () => {
  w = await copyFeeWorld()
})
afterAll(() => w?.t.close())
test('a copy decided before the master was disabled is not opened after it (reconcile)', async () => {
  const mLogin = await w.newAccount(50_000)
  const m = await w.master(mLogin, { reward_type: 3, percent: 10 })
  const f = await w.newAccount(50_000)
  await w.t.settle()
  const sub = await w.follow(f, m, { volume_mode: 1, volume_param: 1 })
  const port = w.t.ports.get(TradingPort) as any
  const orig = port.open
  port.open = async (r: any) => {
    // the fan-out's executor dies before it places the copy: the link waits for copytrade.reconcile
    if (r.login === f) throw new Error('executor died')
    return orig(r)
  }
  try {
    await w.openTrade(mLogin, 0, 100)
    await w.t.settle()
  } finally {
    port.open = orig
  }
  // the master's owner (or staff) disables the master: it is copied no more
  const d = await w.request('PUT', `/copytrade/master/${m}`, { enabled: 0 })
  expect(d.status).toBe(200)
  await w.advance(20_000)
  await w.t.runJob('copytrade.reconcile')
  await w.t.settle()
  const links = await w.t.ctx.db.select().from(copyLinks).where(eq(copyLinks.subscriptionId, sub))
  expect(links.map((l) => [l.status, l.reason, l.followerTicket])).toEqual([
    ['skipped', 'MASTER_DISABLED', null],
  ])
  expect((await w.positions(f)).length).toBe(0)
})

test('a copy decided before the follower switched to CLOSE_ONLY is not opened after it (reconcile)', async () => {
  const mLogin = await w.newAccount(50_000)
  const m = await w.master(mLogin, { reward_type: 3, percent: 10 })
  const f = await w.newAccount(50_000)
  await w.t.settle()
  const sub = await w.follow(f, m, { volume_mode: 1, volume_param: 1 })
  const port = w.t.ports.get(TradingPort) as any
  const orig = port.open
  port.open = async (r: any) => {
    if (r.login === f) throw new Error('executor died')
    return orig(r)
  }
  try {
    await w.openTrade(mLogin, 0, 100)
    await w.t.settle()
  } finally {
    port.open = orig
  }
  // the follower now copies closes only (answered 200): no new copy is opened
  const u = await w.request('PUT', `/copytrade/subscription/${sub}`, { copy_mode: 2 })
  expect(u.status).toBe(200)
  await w.advance(20_000)
  await w.t.runJob('copytrade.reconcile')
  await w.t.settle()
  expect((await w.positions(f)).length).toBe(0)
  const links = await w.t.ctx.db.select().from(copyLinks).where(eq(copyLinks.subscriptionId, sub))
  expect(links.map((l) => [l.status, l.reason])).toEqual([['skipped', 'COPY_MODE']])
})

test('a deposit parked in dead letters is not allocated to a new subscription and then to the old one too', async () => {
  const m1 = await w.master(await w.newAccount(50_000), { reward_type: 3, percent: 10 })
  const m2 = await w.master(await w.newAccount(50_000), { reward_type: 3, percent: 10 })
  const f = await w.newAccount(10_000)
  await w.t.settle()
  const subA = await w.follow(f, m1, {})
  // a deposit whose delivery to copy trading's capital flow keeps failing: parked
  const c = w.t.ctx.events
    .consumersOf(BalanceOperation.name)
    .find((x: any) => x.name === FLOW_CONSUMER) as any
  expect(c).toBeDefined()
  const saved = { handle: c.handle, handleMany: c.handleMany }
  const ofF = (e: any) => e.payload.login === f
  c.handle = async (e: any, tx: Tx) => {
    if (ofF(e)) throw new Error('flow delivery fails')
    return saved.handle.call(c, e, tx)
  }
  if (saved.handleMany)
    c.handleMany = async (es: any[], tx: Tx) => {
      if (es.some(ofF)) throw new Error('flow delivery fails')
      return saved.handleMany.call(c, es, tx)
    }
  try {
    await w.post(`/manager/accounts/${f}/balance`, { type: 'deposit', amount: 10_000 }, w.s.staff)
    for (let i = 0; i < 10; i++) {
      await w.t.settle()
      w.clock.advance(301_000)
    }
    await w.t.settle()
    await w.advance(0)
  } finally {
    c.handle = saved.handle
    c.handleMany = saved.handleMany
  }
  const parked = (
    await w.request('GET', '/manager/events/dead-letters', undefined, w.s.staff)
  ).json.rows.filter((d: any) => d.consumer === FLOW_CONSUMER && !d.retried_time && d.payload.login === f)
  expect(parked).toHaveLength(1)
  // a second subscription on the account: its capital is what no other subscription manages
  await w.request('POST', '/copytrade/follower', { login: f })
  const { policy_version } = (await w.request('GET', `/copytrade/masters/${m2}`)).json
  const b = await w.request('POST', '/copytrade/subscription', {
    follower_login: f,
    master_id: m2,
    policy_version,
  })
  // staff send the deposit back
  expect(
    (await w.request('POST', `/manager/events/dead-letters/${parked[0].id}/retry`, undefined, w.s.staff))
      .status,
  ).toBe(200)
  await w.t.settle()
  const subs = await w.t.ctx.db.select().from(copySubscriptions).where(eq(copySubscriptions.followerLogin, f))
  const capital = subs.filter((s) => s.status !== 2).reduce((a, s) => a + s.capitalMinor, 0)
  // the new subscription waits for the parked deposit: 409 ACCOUNT_SETTLING until staff retry it
  expect([b.status, b.json.error]).toEqual([409, 'ACCOUNT_SETTLING'])
  expect(subs.map((s) => s.id)).toEqual([subA])
  // the account holds 20,000: its subscriptions never manage more between them
  expect(capital).toBeLessThanOrEqual(2_000_000)
})

test('two settings changes at once: both answered 200, both kept', async () => {
  const mLogin = await w.newAccount(50_000)
  const m = await w.master(mLogin, { reward_type: 3, percent: 10 })
  const f = await w.newAccount(50_000)
  await w.t.settle()
  const sub = await w.follow(f, m, { volume_mode: 1, volume_param: 1, max_volume: 0, max_positions: 0 })
  const [a, b] = await Promise.all([
    w.request('PUT', `/copytrade/subscription/${sub}`, { max_volume: 10 }),
    w.request('PUT', `/copytrade/subscription/${sub}`, { max_positions: 3 }),
  ])
  expect([a.status, b.status]).toEqual([200, 200])
  const s = (await w.request('GET', `/copytrade/subscription/${sub}`)).json
  // the follower capped copies at 0.10 lot and answered 200: the cap holds
  expect(s.max_volume).toBe(10)
  expect(s.max_positions).toBe(3)
  // and the master's 1 lot trade is copied at most at 0.10 lot
  await w.openTrade(mLogin, 0, 100)
  await w.t.settle()
  const p = (await w.positions(f)) as unknown as { volume: number }[]
  expect(p.every((x) => x.volume <= 10)).toBe(true)
})

test('symbols filter set (answered 200) while a copy is in flight: the filtered symbol is not copied', async () => {
  const mLogin = await w.newAccount(50_000)
  const m = await w.master(mLogin, { reward_type: 3, percent: 10 })
  const f = await w.newAccount(50_000)
  await w.t.settle()
  const sub = await w.follow(f, m, { volume_mode: 1, volume_param: 1 })
  const port = w.t.ports.get(TradingPort) as any
  const orig = port.open
  let put = 0
  port.open = async (r: any) => {
    if (r.login === f && !put)
      put = (
        await w.request('PUT', `/copytrade/subscription/${sub}`, { symbols_mode: 2, symbols: ['EURUSD'] })
      ).status
    return orig(r)
  }
  try {
    await w.openTrade(mLogin, 0, 100)
    await w.t.settle()
  } finally {
    port.open = orig
  }
  expect(put).toBe(200)
  expect((await w.positions(f)).length).toBe(0)
  // decided again on the new settings, at once
  const links = await w.t.ctx.db.select().from(copyLinks).where(eq(copyLinks.subscriptionId, sub))
  expect(links.map((l) => [l.status, l.reason])).toEqual([['skipped', 'SYMBOL_FILTERED']])
})

test('max_volume lowered (answered 200) while a copy is in flight: the copy is sized on it', async () => {
  const mLogin = await w.newAccount(50_000)
  const m = await w.master(mLogin, { reward_type: 3, percent: 10 })
  const f = await w.newAccount(50_000)
  await w.t.settle()
  const sub = await w.follow(f, m, { volume_mode: 1, volume_param: 1 })
  const port = w.t.ports.get(TradingPort) as any
  const orig = port.open
  let put = 0
  port.open = async (r: any) => {
    if (r.login === f && !put)
      put = (await w.request('PUT', `/copytrade/subscription/${sub}`, { max_volume: 10 })).status
    return orig(r)
  }
  try {
    await w.openTrade(mLogin, 0, 100)
    await w.t.settle()
  } finally {
    port.open = orig
  }
  expect(put).toBe(200)
  const p = (await w.positions(f)) as unknown as { volume: number }[]
  expect(p.map((x) => x.volume)).toEqual([10])
})

test('the master disabled while a copy is in flight: the copy is not placed (MASTER_DISABLED)', async () => {
  const mLogin = await w.newAccount(50_000)
  const m = await w.master(mLogin, { reward_type: 3, percent: 10 })
  const f = await w.newAccount(50_000)
  await w.t.settle()
  const sub = await w.follow(f, m, { volume_mode: 1, volume_param: 1 })
  const port = w.t.ports.get(TradingPort) as any
  const orig = port.open
  let put = 0
  port.open = async (r: any) => {
    if (r.login === f && !put) put = (await w.request('PUT', `/copytrade/master/${m}`, { enabled: 0 })).status
    return orig(r)
  }
  try {
    await w.openTrade(mLogin, 0, 100)
    await w.t.settle()
  } finally {
    port.open = orig
  }
  expect(put).toBe(200)
  expect((await w.positions(f)).length).toBe(0)
  const links = await w.t.ctx.db.select().from(copyLinks).where(eq(copyLinks.subscriptionId, sub))
  expect(links.map((l) => [l.status, l.reason])).toEqual([['skipped', 'MASTER_DISABLED']])
})

test("two changes of a follower profile's defaults at once: both answered 200, both kept", async () => {
  const f = await w.newAccount(10_000)
  await w.t.settle()
  expect((await w.request('POST', '/copytrade/follower', { login: f })).status).toBe(200)
  const [a, b] = await Promise.all([
    w.request('PUT', `/copytrade/follower/${f}`, { max_volume: 10 }),
    w.request('PUT', `/copytrade/follower/${f}`, { max_positions: 3 }),
  ])
  expect([a.status, b.status]).toEqual([200, 200])
  const mine = (await w.request('GET', '/copytrade/follower/mine')).json
  const p = mine.rows.find((x: any) => x.login === f)
  expect([p.defaults.max_volume, p.defaults.max_positions]).toEqual([10, 3])
})
