// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
// Copy trading fees against the fee clock's stops and restarts, every way a subscription ends, a switch of
// terms and a job that was away: money moves where the terms say, exactly once (README: Rewards).
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { copySubscriptions } from '../../src/modules/copytrade/schema'
import { copyFeeWorld, DAY } from '../support/copy-fees'

let w: Awaited<ReturnType<typeof copyFeeWorld>>
beforeAll(async () => {
  // Monday 2026-11-23 08:00 UTC
  w = await copyFeeWorld()
})
afterAll(() => w?.t.close())

const MIN = 60_000
type Row = { status: string; amount: number; reward_name: string; note?: string }
const live = (rows: Row[], name: string) =>
  rows.filter((r) => r.status !== 'cancelled' && r.reward_name === name)
const total = (rows: Row[], name: string) =>
  Math.round(live(rows, name).reduce((a, r) => a + r.amount, 0) * 100) / 100
/** The management fee's days charged, from the accruals' notes ("... for N day(s)"). */
const mgmtDays = (rows: Row[]) =>
  live(rows, 'MANAGEMENT_FEE').reduce((a, r) => a + Number(/for (\d+) day/.exec(r.note ?? '')![1]), 0)
const toMidnight = () => Math.ceil(w.clock.now() / DAY) * DAY - w.clock.now()
const settleJob = () => w.t.runJob('copytrade.settle')
// 36.5 % a year = 0.1 % a day: about 10.00 a day on 10,000
const MGMT = { reward_type: 4, annual_percent: 36.5 }
const FIXED = { reward_type: 0, amount: 30, period_days: 30 }
const HWM = { reward_type: 1, percent: 20, period_days: 30 }

async function follower(policy: object, settings: object = {}) {
  const mLogin = await w.newAccount(10_000)
  const m = await w.master(mLogin, policy)
  const f = await w.newAccount(10_000)
  await w.t.settle()
  const sub = await w.follow(f, m, settings)
  return { mLogin, m, f, sub }
}

test('MANAGEMENT_FEE: a pause over midnight charges the day it stops in; the restart skips only days paused throughout', async () => {
  const { sub } = await follower(MGMT)
  // day 1 (from 08:00), charged by the job after its midnight
  await w.advance(toMidnight() + MIN)
  await settleJob()
  expect(mgmtDays(await w.rewardsOf(sub))).toBe(1)
  // day 2: ACTIVE all day but two minutes over its midnight
  await w.advance(toMidnight() - MIN)
  await w.post(`/copytrade/subscription/${sub}/pause`, {})
  expect(mgmtDays(await w.rewardsOf(sub))).toBe(2)
  await w.advance(2 * MIN)
  await w.post(`/copytrade/subscription/${sub}/resume`, {})
  // day 3: a pause and a resume twice within the day charge it once
  await w.advance(10 * 60 * MIN)
  for (let i = 0; i < 2; i++) {
    await w.post(`/copytrade/subscription/${sub}/pause`, {})
    await w.advance(MIN)
    await w.post(`/copytrade/subscription/${sub}/resume`, {})
    await settleJob()
  }
  expect(mgmtDays(await w.rewardsOf(sub))).toBe(3)
  // paused over a whole day (day 4): that day alone is skipped
  await w.advance(toMidnight() - MIN)
  await settleJob()
  await w.post(`/copytrade/subscription/${sub}/pause`, {})
  await w.advance(DAY + 2 * MIN)
  await settleJob()
  await w.post(`/copytrade/subscription/${sub}/resume`, {})
  await w.advance(toMidnight() + MIN)
  await settleJob()
  await settleJob()
  // days 1, 2, 3 and 5
  expect(mgmtDays(await w.rewardsOf(sub))).toBe(4)
  await w.post(`/copytrade/subscription/${sub}/disable`, {})
})

test('MANAGEMENT_FEE: a master disabled over midnight and enabled again charges the day it was disabled in', async () => {
  const { m, sub } = await follower(MGMT)
  await w.advance(toMidnight() - MIN)
  expect((await w.request('PUT', `/copytrade/master/${m}`, { enabled: 0 })).status).toBe(200)
  await w.advance(2 * MIN)
  await settleJob()
  expect((await w.request('PUT', `/copytrade/master/${m}`, { enabled: 1 })).status).toBe(200)
  await w.advance(toMidnight() + MIN)
  await settleJob()
  // the day of subscribing (stopped at 23:59) and the next one
  expect(mgmtDays(await w.rewardsOf(sub))).toBe(2)
  await w.post(`/copytrade/subscription/${sub}/disable`, {})
})

test('MANAGEMENT_FEE: the days up to the end are charged by the end, once, on every end path', async () => {
  // the follower's disable
  const a = await follower(MGMT)
  await w.advance(toMidnight() + MIN)
  await settleJob()
  await w.advance(toMidnight() - 10 * MIN)
  await w.post(`/copytrade/subscription/${a.sub}/disable`, {})
  await w.advance(20 * MIN)
  await settleJob()
  expect(mgmtDays(await w.rewardsOf(a.sub))).toBe(2)
  // the master deleting its profile, and staff ending the master's subscriptions
  const b = await follower(MGMT)
  const c = await follower(MGMT)
  await w.advance(toMidnight() + MIN)
  await settleJob()
  await w.advance(6 * 60 * MIN)
  expect((await w.request('DELETE', `/copytrade/master/${b.m}`)).status).toBe(200)
  const staff = { reason: 'review', end_subscriptions: true }
  expect(
    (await w.request('POST', `/manager/copytrade/masters/${c.m}/disable`, staff, w.s.staff)).status,
  ).toBe(200)
  await w.t.settle()
  await w.advance(2 * DAY)
  await settleJob()
  expect(mgmtDays(await w.rewardsOf(b.sub))).toBe(2)
  expect(mgmtDays(await w.rewardsOf(c.sub))).toBe(2)
})

// a reviewer's finding: an end charges its day in full, and a new subscription of the same account to the
// same master started that day again: each end and re-subscribe took the day once more
test('MANAGEMENT_FEE: an end and a new subscription to the same master the same day charge that day once', async () => {
  const { m, f, sub } = await follower(MGMT)
  await w.advance(60 * MIN)
  await w.post(`/copytrade/subscription/${sub}/disable`, {})
  await w.advance(60 * MIN)
  const again = await w.follow(f, m)
  await w.advance(toMidnight() + MIN)
  await settleJob()
  // the day both ran in: once, by the end; the new one's days from the next
  expect(mgmtDays(await w.rewardsOf(sub))).toBe(1)
  expect(mgmtDays(await w.rewardsOf(again))).toBe(0)
  await w.advance(toMidnight() + MIN)
  await settleJob()
  expect(mgmtDays(await w.rewardsOf(again))).toBe(1)
  await w.post(`/copytrade/subscription/${again}/disable`, {})
})

test('MANAGEMENT_FEE: after the job was away 60 days, all 60 days are charged, once', async () => {
  const { sub } = await follower(MGMT)
  await w.advance(60 * DAY)
  await settleJob()
  await settleJob()
  await w.advance(MIN)
  await settleJob()
  const rows = await w.rewardsOf(sub)
  expect(mgmtDays(rows)).toBe(60)
  // in accruals of at most 31 days
  expect(
    live(rows, 'MANAGEMENT_FEE')
      .map((r) => Number(/for (\d+) day/.exec(r.note!)![1]))
      .sort(),
  ).toEqual([29, 31])
  await w.post(`/copytrade/subscription/${sub}/disable`, {})
  expect(mgmtDays(await w.rewardsOf(sub))).toBe(61)
})

test('SUBSCRIPTION_FEE: the first period is charged when subscribing; ended before the job ran, it is still paid, once', async () => {
  const { sub } = await follower(FIXED)
  // before any run of the job
  expect((await w.rewardsOf(sub)).map((r) => [r.reward_name, r.amount, r.status])).toEqual([
    ['SUBSCRIPTION_FEE', 30, 'settled'],
  ])
  await w.advance(30_000)
  await w.post(`/copytrade/subscription/${sub}/disable`, {})
  await w.t.settle()
  await settleJob()
  await w.advance(31 * DAY)
  await settleJob()
  expect(total(await w.rewardsOf(sub), 'SUBSCRIPTION_FEE')).toBe(30)
  // and the job does not charge it a second time on a live one
  const other = await follower(FIXED)
  await settleJob()
  await settleJob()
  expect(total(await w.rewardsOf(other.sub), 'SUBSCRIPTION_FEE')).toBe(30)
  await w.post(`/copytrade/subscription/${other.sub}/disable`, {})
})

test('SUBSCRIPTION_FEE: a period that came due before the job ran is charged by a switch of terms, and by an end', async () => {
  const a = await follower(FIXED)
  const b = await follower(FIXED)
  // period 2 is due at day 30; the switch and the end land 10 s later, before the job
  await w.advance(30 * DAY + 10_000)
  const u = await w.request('PUT', `/copytrade/master/${a.m}`, {
    reward_policy: { reward_type: 4, annual_percent: 1 },
  })
  expect(u.status).toBe(200)
  const version = (await w.request('GET', `/copytrade/masters/${a.m}`)).json.policy_version
  expect((await w.request('POST', `/copytrade/subscription/${a.sub}/terms`, { version })).status).toBe(200)
  await w.post(`/copytrade/subscription/${b.sub}/disable`, {})
  await settleJob()
  await w.advance(MIN)
  await settleJob()
  expect(total(await w.rewardsOf(a.sub), 'SUBSCRIPTION_FEE')).toBe(60)
  expect(total(await w.rewardsOf(b.sub), 'SUBSCRIPTION_FEE')).toBe(60)
  await w.post(`/copytrade/subscription/${a.sub}/disable`, {})
})

/** A HWM subscription whose copy made a realized gain; what the fee on it is now. */
async function gain() {
  await w.price(1.1)
  const g = await follower(HWM, { volume_mode: 0, volume_param: 100 })
  await w.openTrade(g.mLogin, 0, 100)
  await w.t.settle()
  await w.price(1.12)
  const [pos] = await w.positions(g.mLogin)
  expect((await w.closeTrade(g.mLogin, pos!.order)).status).toBe(200)
  await w.t.settle()
  const due = (await w.preview(g.sub)).performance_fee_now as number
  expect(due).toBeGreaterThan(0)
  return { ...g, due }
}

test('PERFORMANCE_FEE_HWM: a subscription ended by the master deleting its profile, or by staff, pays the fee on its gains, once', async () => {
  const deleted = await gain()
  expect((await w.request('DELETE', `/copytrade/master/${deleted.m}`)).status).toBe(200)
  const ended = await gain()
  const staff = { reason: 'review', end_subscriptions: true }
  expect(
    (await w.request('POST', `/manager/copytrade/masters/${ended.m}/disable`, staff, w.s.staff)).status,
  ).toBe(200)
  await w.t.settle()
  await w.advance(31 * DAY)
  await settleJob()
  for (const g of [deleted, ended]) {
    expect((await w.request('GET', `/copytrade/subscription/${g.sub}`)).json.status_name).toBe('DISABLED')
    const fees = live(await w.rewardsOf(g.sub), 'PERFORMANCE_FEE_HWM')
    expect(fees.map((r) => [r.amount, r.status])).toEqual([[g.due, 'settled']])
  }
})

test('PERFORMANCE_FEE_HWM: a period end charged again under its key (a run that died before moving the period) moves no mark', async () => {
  const g = await gain()
  await w.advance(30 * DAY + MIN)
  await settleJob()
  const first = live(await w.rewardsOf(g.sub), 'PERFORMANCE_FEE_HWM')
  expect(first.map((r) => r.amount)).toEqual([g.due])
  // the period's move lost, as by a crash between the fee and it; then the copies gain again
  const [s] = await w.t.ctx.db.select().from(copySubscriptions).where(eq(copySubscriptions.id, g.sub))
  await w.t.ctx.db
    .update(copySubscriptions)
    .set({ nextPerfAt: s!.nextPerfAt! - 30 * DAY })
    .where(eq(copySubscriptions.id, g.sub))
  await w.price(1.1)
  await w.openTrade(g.mLogin, 0, 100)
  await w.t.settle()
  await w.price(1.12)
  const [pos] = await w.positions(g.mLogin)
  expect((await w.closeTrade(g.mLogin, pos!.order)).status).toBe(200)
  await w.t.settle()
  const again = (await w.preview(g.sub)).performance_fee_now as number
  expect(again).toBeGreaterThan(0)
  // the period end runs again under the key it charged: nothing new, and the mark stays
  await settleJob()
  expect((await w.preview(g.sub)).performance_fee_now).toBe(again)
  // so the end charges those gains
  await w.post(`/copytrade/subscription/${g.sub}/disable`, {})
  await w.t.settle()
  expect(total(await w.rewardsOf(g.sub), 'PERFORMANCE_FEE_HWM')).toBeCloseTo(g.due + again, 2)
})

// the lead's decision (no code change): a pause stops the fee clock, not the high-water mark
test('PERFORMANCE_FEE_HWM: gains of copies kept open while paused are charged by a withdrawal, never by a period end while paused', async () => {
  await w.price(1.1)
  const { mLogin, f, sub } = await follower(HWM, { volume_mode: 0, volume_param: 100 })
  await w.openTrade(mLogin, 0, 100)
  await w.t.settle()
  expect((await w.preview(sub)).performance_fee_now).toBe(0)
  await w.post(`/copytrade/subscription/${sub}/pause`, {})
  await w.price(1.12)
  const due = (await w.preview(sub)).performance_fee_now as number
  expect(due).toBeGreaterThan(0)
  await w.advance(31 * DAY)
  await w.price(1.12)
  await settleJob()
  expect(live(await w.rewardsOf(sub), 'PERFORMANCE_FEE_HWM')).toEqual([])
  await w.post(`/manager/accounts/${f}/balance`, { type: 'withdrawal', amount: 100 }, w.s.staff)
  await w.t.settle()
  expect(total(await w.rewardsOf(sub), 'PERFORMANCE_FEE_HWM')).toBeCloseTo(due, 2)
  await w.post(`/copytrade/subscription/${sub}/disable`, {})
})
