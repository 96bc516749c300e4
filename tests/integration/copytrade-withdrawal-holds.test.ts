// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
// A follower's withdrawal through the cashier holds its money when asked and pays it out (or returns it)
// when staff decide. A rejected withdrawal charged the performance fee on the gains so far at the hold,
// and its return came back as new money: the fee stayed charged on a withdrawal that never happened.
// Now the hold moves the subscription as a withdrawal, its fee waits (`held`), the payout makes it owed,
// and a return cancels it and undoes the hold. Time is moved, never slept.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { eq, sql } from 'drizzle-orm'
import type { Tx } from '../../src/kernel/db/client'
import type { DeliveredEvent } from '../../src/kernel/events/topic'
import { copyHolds } from '../../src/modules/copytrade/schema'
import { copyFeeWorld, DAY } from '../support/copy-fees'

let w: Awaited<ReturnType<typeof copyFeeWorld>>

beforeAll(async () => {
  w = await copyFeeWorld()
  // withdrawals without KYC steps: this is about the money, not the gate
  const settings = (await w.request('GET', '/manager/kyc/settings', undefined, w.s.staff)).json
  await w.t.request('PUT', '/manager/kyc/settings', {
    token: w.s.staff,
    body: { steps: settings.steps, tiers: { ...settings.tiers, withdrawal_after: [] } },
  })
})
afterAll(() => w.t.close())

const withdraw = async (login: number, amount: number) =>
  (await w.post('/cashier/withdrawal', { login, method: 'wire', amount })).transaction.id as number
const decide = (id: number, action: string, body: object = {}) =>
  w.post(`/manager/cashier/transactions/${id}/${action}`, body, w.s.staff)
const holdsOf = (login: number) => w.t.ctx.db.select().from(copyHolds).where(eq(copyHolds.login, login))

/** A master on a 20 % performance fee with one open lot, and a follower of it in profit. */
async function followerInProfit(settings: object = {}) {
  await w.price(1.1)
  const mLogin = await w.newAccount(20_000)
  const m = await w.master(mLogin, { reward_type: 1, percent: 20, period_days: 30 })
  const f = await w.newAccount(10_000)
  await w.t.settle()
  const sub = await w.follow(f, m, { volume_mode: 1, volume_param: 0.5, ...settings })
  await w.openTrade(mLogin, 0, 100)
  await w.t.settle()
  await w.price(1.12)
  const p = await w.preview(sub)
  expect(p.performance_fee_now).toBeGreaterThan(50)
  return { m, mLogin, f, sub, p }
}

test('a withdrawal that is rejected charges no fee and leaves the subscription as it was; paid out, it owes its fee', async () => {
  const { f, sub, p } = await followerInProfit()
  expect(p).toMatchObject({ copy_capital: 10_000, high_water_mark: 10_000 })
  const heldLike = async () => {
    // held: the money is out of the subscription, its fee waits for the payout (owed, not paid)
    const [fee, ...more] = await w.rewardsOf(sub)
    expect(more).toEqual([])
    expect(fee).toMatchObject({ reward_name: 'PERFORMANCE_FEE_HWM', status: 'held' })
    expect(fee!.amount).toBeCloseTo(p.performance_fee_now, 2)
    const v = await w.preview(sub)
    expect(v).toMatchObject({ copy_capital: 9000, fees_paid: 0, performance_fee_now: 0 })
    expect(v.fees_owed).toBeCloseTo(fee!.amount, 2)
    // the mark: the equity after the fee, less the withdrawal
    expect(v.high_water_mark).toBeCloseTo(p.copy_equity - fee!.amount - 1000, 1)
    return fee!
  }
  const held = await withdraw(f, 1000)
  await w.t.settle()
  const cancelled = await heldLike()
  await decide(held, 'reject', { reason: 'name does not match' })
  await w.t.settle()
  // as if it had never been asked for
  expect(await w.rewardsOf(sub)).toMatchObject([{ id: cancelled.id, status: 'cancelled' }])
  expect(await w.preview(sub)).toMatchObject({
    copy_capital: 10_000,
    high_water_mark: 10_000,
    fees_owed: 0,
    fees_paid: 0,
    performance_fee_now: p.performance_fee_now,
  })
  expect(await holdsOf(f)).toEqual([])

  // asked again and paid out: the fee it held is owed, and paid
  const paid = await withdraw(f, 1000)
  await w.t.settle()
  await decide(paid, 'approve')
  await w.t.settle()
  await decide(paid, 'mark-paid')
  await w.t.settle()
  const [settled, again] = await w.rewardsOf(sub)
  expect(again).toMatchObject({ id: cancelled.id, status: 'cancelled' })
  expect(settled).toMatchObject({ reward_name: 'PERFORMANCE_FEE_HWM', status: 'settled' })
  expect(settled!.amount).toBeCloseTo(p.performance_fee_now, 2)
  const after = await w.preview(sub)
  expect(after).toMatchObject({ copy_capital: 9000, fees_owed: 0, performance_fee_now: 0 })
  expect(after.fees_paid).toBeCloseTo(settled!.amount, 2)
  expect(after.high_water_mark).toBeCloseTo(p.copy_equity - settled!.amount - 1000, 1)
  expect(await holdsOf(f)).toEqual([])
})

test.each([
  ['paid', 'owe the fee once'],
  ['returned', 'leave the subscription as it was'],
] as const)('an outcome delivered before its hold waits for it (%s), and the two %s', async (outcome) => {
  const { f, sub, p } = await followerInProfit()
  const flow = w.t.ctx.events
    .consumersOf('account.balance_operation')
    .find((c) => c.name === 'copytrade.capital-flow')!
  const handle = flow.handle!
  // the hold's first delivery fails: the relay tries it again later, after the outcome's
  let lost = 0
  flow.handle = async (e: DeliveredEvent<unknown>, tx: Tx) => {
    const op = e.payload as { hold?: string | null; op: string }
    if (op.hold && op.op === 'OP_BALANCE_OUT' && lost++ === 0) throw new Error('hold delivery lost')
    return handle.call(flow, e, tx)
  }
  try {
    const id = await withdraw(f, 1000)
    await w.t.settle()
    if (outcome === 'paid') {
      await decide(id, 'approve')
      await decide(id, 'mark-paid')
    } else await decide(id, 'reject', { reason: 'test' })
    await w.t.settle()
    expect(lost).toBe(1)
    // the outcome came first: kept until its hold arrives
    expect(await holdsOf(f)).toMatchObject([{ outcome, heldAt: null }])
    expect(await w.rewardsOf(sub)).toEqual([])
    expect((await w.preview(sub)).copy_capital).toBe(10_000)
    w.clock.advance(5_000)
    await w.t.settle()
  } finally {
    flow.handle = handle
  }
  expect(await holdsOf(f)).toEqual([])
  const rewards = await w.rewardsOf(sub)
  if (outcome === 'returned') {
    expect(rewards).toEqual([])
    expect(await w.preview(sub)).toMatchObject({ copy_capital: 10_000, high_water_mark: 10_000 })
    return
  }
  expect(rewards).toMatchObject([{ reward_name: 'PERFORMANCE_FEE_HWM', status: 'settled' }])
  expect(rewards[0]!.amount).toBeCloseTo(p.performance_fee_now, 2)
  expect((await w.preview(sub)).copy_capital).toBe(9000)
})

test('a named hold an instance of the version before took as an ordinary withdrawal: its return is a deposit, as it was', async () => {
  const { f, sub } = await followerInProfit()
  const flow = w.t.ctx.events
    .consumersOf('account.balance_operation')
    .find((c) => c.name === 'copytrade.capital-flow')!
  const handle = flow.handle!
  // what a relay of the version before does with it: the hold's name means nothing to it
  flow.handle = (e: DeliveredEvent<unknown>, tx: Tx) =>
    handle.call(flow, { ...e, payload: { ...(e.payload as object), hold: null } }, tx)
  let id: number
  try {
    id = await withdraw(f, 1000)
    await w.t.settle()
  } finally {
    flow.handle = handle
  }
  expect(await w.rewardsOf(sub)).toMatchObject([{ status: 'settled' }])
  expect((await w.preview(sub)).copy_capital).toBe(9000)
  await decide(id, 'reject', { reason: 'test' })
  await w.t.settle()
  // the whole of the account is the subscription's: the whole deposit comes back to it
  expect((await w.preview(sub)).copy_capital).toBe(10_000)
  expect(await w.rewardsOf(sub)).toMatchObject([{ status: 'settled' }])
  expect(await holdsOf(f)).toEqual([])
})

test('a return puts back what the hold took from a subscription live then, and is new money to one started while it was held', async () => {
  const m = await w.master(await w.newAccount(20_000), { reward_type: 1, percent: 20, period_days: 30 })
  const m2 = await w.master(await w.newAccount(20_000), { reward_type: 1, percent: 20, period_days: 30 })
  const g = await w.newAccount(10_000)
  await w.t.settle()
  const a = await w.follow(g, m, { capital: 4000 })
  w.clock.advance(1000)
  const returned = await withdraw(g, 2000)
  await w.t.settle()
  // a manages 4,000 of 10,000: its share of the 2,000 held is 800
  expect(await w.preview(a)).toMatchObject({ copy_capital: 3200, high_water_mark: 3200 })
  w.clock.advance(1000)
  const b = await w.follow(g, m2, { capital: 4000 })
  w.clock.advance(1000)
  await decide(returned, 'approve')
  await decide(returned, 'payout-failed', { reason: 'the bank refused it' })
  await w.t.settle()
  expect(await w.preview(a)).toMatchObject({ copy_capital: 4000, high_water_mark: 4000 })
  // b's start balance (8,000) did not have the 2,000: its share (half) of it is new money
  expect(await w.preview(b)).toMatchObject({ copy_capital: 5000, high_water_mark: 5000 })
  // h follows no one when it asks: the hold is kept all the same, for a subscription that may start;
  // paid out after one started, it leaves it alone (its start balance had let the money go)
  const h = await w.newAccount(10_000)
  await w.t.settle()
  const paid = await withdraw(h, 2000)
  await w.t.settle()
  expect(await holdsOf(h)).toHaveLength(1)
  w.clock.advance(1000)
  const subH = await w.follow(h, m, { capital: 4000 })
  w.clock.advance(1000)
  await decide(paid, 'approve')
  await decide(paid, 'mark-paid')
  await w.t.settle()
  expect(await w.preview(subH)).toMatchObject({ copy_capital: 4000, high_water_mark: 4000 })
  expect([...(await holdsOf(g)), ...(await holdsOf(h))]).toEqual([])
})

test('a withdrawal held before holds were named stays what it was: its hold was the flow, its payout moves nothing again', async () => {
  const m = await w.master(await w.newAccount(20_000), { reward_type: 1, percent: 20, period_days: 30 })
  const f = await w.newAccount(10_000)
  await w.t.settle()
  const sub = await w.follow(f, m, { capital: 5000 })
  // two withdrawals as migration 0035 finds them: funds held by a balance-out that names no hold (a
  // staff withdrawal is one), rows that say so
  const legacy = async () => {
    await w.post(`/manager/accounts/${f}/balance`, { type: 'withdrawal', amount: 1000 }, w.s.staff)
    const model = await withdraw(f, 50)
    const [row] = await w.t.ctx.db.all<{ id: number }>(
      sql`insert into cashier_transactions (brand_id, customer_id, login, kind, method, provider, status,
        amount, fee, currency, hold_named, created_at, updated_at)
        select brand_id, customer_id, login, kind, method, provider, status, 100000, 0, currency, 0,
          created_at, updated_at from cashier_transactions where id = ${model} returning id`,
    )
    await decide(model, 'reject', { reason: 'a model only' })
    await w.t.settle()
    return row!.id
  }
  const returned = await legacy()
  const paid = await legacy()
  // each hold took its share (a half) when it was written, as before
  const held = (await w.preview(sub)).copy_capital
  expect(held).toBe(4000)
  await decide(returned, 'reject', { reason: 'test' })
  await w.t.settle()
  // its return is a deposit: the half of it comes back
  expect((await w.preview(sub)).copy_capital).toBeCloseTo(held + 500, 2)
  await decide(paid, 'approve')
  await decide(paid, 'mark-paid')
  await w.t.settle()
  expect((await w.preview(sub)).copy_capital).toBeCloseTo(held + 500, 2)
  expect(await holdsOf(f)).toEqual([])
})

test('a subscription that ends while a fee is held owes it, whatever the withdrawal becomes', async () => {
  const { f, sub, p } = await followerInProfit()
  const id = await withdraw(f, 1000)
  await w.t.settle()
  await w.post(`/copytrade/subscription/${sub}/disable`, {})
  await w.t.settle()
  await decide(id, 'reject', { reason: 'test' })
  await w.t.settle()
  // the end settled its gains on the mark the hold had moved: the fee held is what they owe
  const rewards = await w.rewardsOf(sub)
  expect(rewards).toMatchObject([{ reward_name: 'PERFORMANCE_FEE_HWM', status: 'settled' }])
  expect(rewards[0]!.amount).toBeCloseTo(p.performance_fee_now, 2)
  expect(await holdsOf(f)).toEqual([])
})

test('terms switched while a fee is held: the old terms keep their fee, the new ones never charge those gains', async () => {
  const { m, mLogin, f, sub, p } = await followerInProfit()
  const id = await withdraw(f, 1000)
  await w.t.settle()
  const [position] = await w.positions(mLogin)
  await w.closeTrade(mLogin, position!.order)
  await w.t.settle()
  const policy = { reward_type: 1, percent: 50, period_days: 30 }
  await w.request('PUT', `/copytrade/master/${m}`, { reward_policy: policy })
  const { policy_version } = (await w.request('GET', `/copytrade/masters/${m}`)).json
  expect(
    (await w.request('POST', `/copytrade/subscription/${sub}/terms`, { version: policy_version })).status,
  ).toBe(200)
  await decide(id, 'reject', { reason: 'test' })
  await w.t.settle()
  // its capital back as money, the mark with it: nothing above the mark for the new terms
  const v = await w.preview(sub)
  expect(v).toMatchObject({ copy_capital: 10_000, performance_fee_now: 0, terms: { percent: 50 } })
  expect(v.high_water_mark).toBeCloseTo(v.copy_equity, 2)
  await w.advance(31 * DAY)
  await w.t.runJob('copytrade.settle')
  const rewards = await w.rewardsOf(sub)
  expect(rewards).toMatchObject([{ status: 'settled' }])
  expect(rewards[0]!.amount).toBeCloseTo(p.performance_fee_now, 2)
})

test('a hold parked in dead letters: its outcome waits for the retry, which resolves both', async () => {
  const { f, sub, p } = await followerInProfit()
  const flow = w.t.ctx.events
    .consumersOf('account.balance_operation')
    .find((c) => c.name === 'copytrade.capital-flow')!
  const handle = flow.handle!
  flow.handle = async (e: DeliveredEvent<unknown>, tx: Tx) => {
    const op = e.payload as { hold?: string | null; op: string }
    if (op.hold && op.op === 'OP_BALANCE_OUT') throw new Error('hold delivery fails')
    return handle.call(flow, e, tx)
  }
  let id: number
  try {
    id = await withdraw(f, 1000)
    // every attempt fails until the relay parks it
    for (let i = 0; i < 10; i++) {
      await w.t.settle()
      w.clock.advance(301_000)
    }
    await w.t.settle()
  } finally {
    flow.handle = handle
  }
  const parked = (
    await w.request('GET', '/manager/events/dead-letters', undefined, w.s.staff)
  ).json.rows.filter(
    (d: { consumer: string; retried_time: number }) =>
      d.consumer === 'copytrade.capital-flow' && !d.retried_time,
  )
  expect(parked).toHaveLength(1)
  await decide(id, 'reject', { reason: 'test' })
  await w.t.settle()
  expect(await holdsOf(f)).toMatchObject([{ outcome: 'returned', heldAt: null }])
  // not a deposit: the hold never reached the subscription
  expect((await w.preview(sub)).copy_capital).toBe(10_000)
  const retried = await w.request(
    'POST',
    `/manager/events/dead-letters/${parked[0].id}/retry`,
    undefined,
    w.s.staff,
  )
  expect(retried.status).toBe(200)
  await w.t.settle()
  expect(await holdsOf(f)).toEqual([])
  expect(await w.rewardsOf(sub)).toEqual([])
  expect(await w.preview(sub)).toMatchObject({
    copy_capital: 10_000,
    high_water_mark: 10_000,
    performance_fee_now: p.performance_fee_now,
  })
})

test('a withdrawal its customer cancels is a return: the held fee is cancelled and the hold undone', async () => {
  const { f, sub, p } = await followerInProfit()
  const id = await withdraw(f, 1000)
  await w.t.settle()
  expect(await w.rewardsOf(sub)).toMatchObject([{ status: 'held' }])
  expect((await w.post(`/cashier/transactions/${id}/cancel`, {})).status_name).toBe('cancelled')
  await w.t.settle()
  expect(await w.rewardsOf(sub)).toMatchObject([{ status: 'cancelled' }])
  expect(await w.preview(sub)).toMatchObject({
    copy_capital: 10_000,
    high_water_mark: 10_000,
    performance_fee_now: p.performance_fee_now,
  })
  expect(await holdsOf(f)).toEqual([])
})
