// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
// Findings of the fifth copy trading probe (.tmp/probe-copy5): a copy decided but not yet opened is not
// opened once its master is disabled or its follower copies closes only; a deposit parked in dead letters
// is not allocated twice; two settings changes at once are both kept; a settings change committed while a
// copy is in flight is what the copy is decided on. And the review of that fix (.tmp/review-copy5): a refused
// copy's reason costs no read of its own; an executor writes back only links still under its own lease; a
// settings change is not written over a disable committed since it was read.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { and, eq, sql } from 'drizzle-orm'
import type { Tx } from '../../src/kernel/db/client'
import { BalanceOperation } from '../../src/modules/accounts'
import { FLOW_CONSUMER } from '../../src/modules/copytrade/copier/holds'
import { copyLinks, copyRecords, copySubscriptions } from '../../src/modules/copytrade/schema'
import { MarketPort } from '../../src/modules/market'
import { TradingPort } from '../../src/modules/trading'
import { copyFeeWorld } from '../support/copy-fees'

let w: Awaited<ReturnType<typeof copyFeeWorld>>
beforeAll(async () => {
  w = await copyFeeWorld()
})
afterAll(() => w?.t.close())

/** Another executor (the reconcile job, the first one's lease run out) takes the subscription's opening link over: its new lease. */
async function takeOver(sub: number) {
  const [l] = await w.t.ctx.db
    .update(copyLinks)
    .set({ leaseUntil: sql`${copyLinks.leaseUntil} + 1000`, attempts: sql`${copyLinks.attempts} + 1` })
    .where(and(eq(copyLinks.subscriptionId, sub), eq(copyLinks.status, 'opening')))
    .returning()
  return l!.leaseUntil
}

/**
 * The master opens a trade with trading's open port passed through `hook` (each copy's open meets it
 * before, or after, trading: `open` is the port's own), the port as it was afterwards.
 */
async function masterOpensThrough(
  mLogin: number,
  hook: (r: any, open: (r: any) => Promise<any>) => Promise<any>,
) {
  const port = w.t.ports.get(TradingPort) as any
  const open = port.open
  port.open = (r: any) => hook(r, open)
  try {
    await w.openTrade(mLogin, 0, 100)
    await w.t.settle()
  } finally {
    port.open = open
  }
}
test('a copy decided before the master was disabled is not opened after it (reconcile)', async () => {
  const mLogin = await w.newAccount(50_000)
  const m = await w.master(mLogin, { reward_type: 3, percent: 10 })
  const f = await w.newAccount(50_000)
  await w.t.settle()
  const sub = await w.follow(f, m, { volume_mode: 1, volume_param: 1 })
  await masterOpensThrough(mLogin, async (r, open) => {
    // the fan-out's executor dies before it places the copy: the link waits for copytrade.reconcile
    if (r.login === f) throw new Error('executor died')
    return open(r)
  })
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
  await masterOpensThrough(mLogin, async (r, open) => {
    if (r.login === f) throw new Error('executor died')
    return open(r)
  })
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
  let put = 0
  await masterOpensThrough(mLogin, async (r, open) => {
    if (r.login === f && !put)
      put = (
        await w.request('PUT', `/copytrade/subscription/${sub}`, { symbols_mode: 2, symbols: ['EURUSD'] })
      ).status
    return open(r)
  })
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
  let put = 0
  await masterOpensThrough(mLogin, async (r, open) => {
    if (r.login === f && !put)
      put = (await w.request('PUT', `/copytrade/subscription/${sub}`, { max_volume: 10 })).status
    return open(r)
  })
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
  let put = 0
  await masterOpensThrough(mLogin, async (r, open) => {
    if (r.login === f && !put) put = (await w.request('PUT', `/copytrade/master/${m}`, { enabled: 0 })).status
    return open(r)
  })
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

test('master disabled during a fan-out of N copies: the refusals are explained in O(1) statements, not N', async () => {
  const N = 12
  const mLogin = await w.newAccount(50_000)
  const m = await w.master(mLogin, { reward_type: 3, percent: 10 })
  const fs: number[] = []
  for (let i = 0; i < N; i++) fs.push(await w.newAccount(50_000))
  await w.t.settle()
  for (const f of fs) await w.follow(f, m, { volume_mode: 1, volume_param: 1 })
  let gate = null as Promise<number> | null
  const db = w.t.ctx.db as any
  const sel = db.select
  let why = 0
  db.select = function (...a: unknown[]) {
    if ((new Error().stack ?? '').includes('unwantedBecause')) why++
    return sel.apply(this, a)
  }
  try {
    await masterOpensThrough(mLogin, async (r, open) => {
      if (fs.includes(r.login)) {
        gate ??= w.request('PUT', `/copytrade/master/${m}`, { enabled: 0 }).then((x) => x.status)
        await gate
      }
      return open(r)
    })
  } finally {
    db.select = sel
  }
  expect(await gate).toBe(200)
  const links = await w.t.ctx.db.select().from(copyLinks).where(eq(copyLinks.masterLogin, mLogin))
  expect(links.map((l) => l.reason)).toEqual(Array(N).fill('MASTER_DISABLED'))
  // one statement per refused copy, each behind ctx.limit: N round trips (a 1,000-follower master: 1,000)
  expect(why).toBeLessThanOrEqual(1)
})

test("a chunk of opens reads its subscriptions and their masters' state in one statement", async () => {
  const mLogin = await w.newAccount(50_000)
  const m = await w.master(mLogin, { reward_type: 3, percent: 10 })
  const fs: number[] = []
  for (let i = 0; i < 3; i++) fs.push(await w.newAccount(50_000))
  await w.t.settle()
  for (const f of fs) await w.follow(f, m, { volume_mode: 1, volume_param: 1 })
  const db = w.t.ctx.db as any
  const sel = db.select
  let reads = 0
  db.select = function (...a: unknown[]) {
    // the statements openChunk itself makes (not those of the helpers it calls)
    if ((new Error().stack ?? '').split('\n')[2]?.includes('openChunk')) reads++
    return sel.apply(this, a)
  }
  try {
    await w.openTrade(mLogin, 0, 100)
    await w.t.settle()
  } finally {
    db.select = sel
  }
  const links = await w.t.ctx.db.select().from(copyLinks).where(eq(copyLinks.masterLogin, mLogin))
  expect(links.map((l) => l.status)).toEqual(['open', 'open', 'open'])
  expect(reads).toBe(1)
})

test("a copy decided again is set back to pending only under its executor's lease, not over a takeover", async () => {
  const mLogin = await w.newAccount(50_000)
  const m = await w.master(mLogin, { reward_type: 3, percent: 10 })
  const f = await w.newAccount(50_000)
  await w.t.settle()
  const sub = await w.follow(f, m, { volume_mode: 1, volume_param: 1 })
  let put = 0
  let lease = 0
  await masterOpensThrough(mLogin, async (r, open) => {
    if (r.login === f && !put) {
      // the settings change: trading's commit refuses this copy, to be decided again on them
      put = (await w.request('PUT', `/copytrade/subscription/${sub}`, { max_volume: 10 })).status
      // meanwhile another executor (the reconcile job, this one's lease run out) took the link over
      lease = await takeOver(sub)
    }
    return open(r)
  })
  expect(put).toBe(200)
  // the link is the other executor's: not set back to pending, nor opened again by this one
  let links = await w.t.ctx.db.select().from(copyLinks).where(eq(copyLinks.subscriptionId, sub))
  expect(links.map((l) => [l.status, l.leaseUntil])).toEqual([['opening', lease]])
  expect((await w.positions(f)).length).toBe(0)
  // that executor never finishes: once its lease runs out the reconcile job opens it, on the settings now
  await w.advance(20_000)
  await w.t.runJob('copytrade.reconcile')
  await w.t.settle()
  links = await w.t.ctx.db.select().from(copyLinks).where(eq(copyLinks.subscriptionId, sub))
  expect(links.map((l) => l.status)).toEqual(['open'])
  expect(((await w.positions(f)) as unknown as { volume: number }[]).map((p) => p.volume)).toEqual([10])
})

test("an executor records its opens only under its own lease: a takeover's executor records the copy once", async () => {
  const mLogin = await w.newAccount(50_000)
  const m = await w.master(mLogin, { reward_type: 3, percent: 10 })
  const f = await w.newAccount(50_000)
  await w.t.settle()
  const sub = await w.follow(f, m, { volume_mode: 1, volume_param: 1 })
  let lease = 0
  await masterOpensThrough(mLogin, async (r, open) => {
    const out = await open(r)
    if (r.login === f && !lease) {
      // the copy is placed; before its executor records it another took the link over
      lease = await takeOver(sub)
    }
    return out
  })
  expect(lease).toBeGreaterThan(0)
  let links = await w.t.ctx.db.select().from(copyLinks).where(eq(copyLinks.subscriptionId, sub))
  expect(links.map((l) => [l.status, l.leaseUntil])).toEqual([['opening', lease]])
  expect(await w.t.ctx.db.select().from(copyRecords).where(eq(copyRecords.subscriptionId, sub))).toEqual([])
  // the other executor's lease runs out too: the reconcile job finds the copy placed under its key
  await w.advance(20_000)
  await w.t.runJob('copytrade.reconcile')
  await w.t.settle()
  const positions = (await w.positions(f)) as unknown as { order: number }[]
  expect(positions.length).toBe(1)
  links = await w.t.ctx.db.select().from(copyLinks).where(eq(copyLinks.subscriptionId, sub))
  expect(links.map((l) => [l.status, l.followerTicket])).toEqual([['open', positions[0]!.order]])
  const records = await w.t.ctx.db.select().from(copyRecords).where(eq(copyRecords.subscriptionId, sub))
  expect(records.map((r) => [r.result, r.followerTicket])).toEqual([['copied', positions[0]!.order]])
})

test('a subscription disabled between the read and the write of a settings change: 409, nothing written', async () => {
  const mLogin = await w.newAccount(50_000)
  const m = await w.master(mLogin, { reward_type: 3, percent: 10 })
  const f = await w.newAccount(50_000)
  await w.t.settle()
  const sub = await w.follow(f, m, { volume_mode: 1, volume_param: 1, max_volume: 0 })
  const [before] = await w.t.ctx.db.select().from(copySubscriptions).where(eq(copySubscriptions.id, sub))
  const refdata = (w.t.ports.get(MarketPort) as any).refdata
  const fresh = refdata.fresh
  let disabled = 0
  refdata.fresh = async function (...a: unknown[]) {
    // the settings change read the subscription ACTIVE; its disable commits before the write
    if (!disabled && (new Error().stack ?? '').includes('updateSubscription'))
      disabled = (await w.request('POST', `/copytrade/subscription/${sub}/disable`, {})).status
    return fresh.apply(this, a)
  }
  let put: Awaited<ReturnType<typeof w.request>>
  try {
    put = await w.request('PUT', `/copytrade/subscription/${sub}`, { max_volume: 10 })
  } finally {
    refdata.fresh = fresh
  }
  expect(disabled).toBe(200)
  expect([put.status, put.json.error]).toEqual([409, 'INVALID_TRANSITION'])
  expect(put.text).toContain('is disabled')
  const [after] = await w.t.ctx.db.select().from(copySubscriptions).where(eq(copySubscriptions.id, sub))
  expect([after!.status, after!.settings]).toEqual([2, before!.settings])
})
