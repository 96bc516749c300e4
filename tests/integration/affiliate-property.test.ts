// Affiliate conversions, property (issue 30): for random histories of a referred customer (KYC approvals,
// deposits credited, refunded, closed trades), delivering the events out of order and twice through the
// real outbox and relay leaves the same conversion rows as delivering them once in time order.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import fc from 'fast-check'
import { ManualClock } from '../../src/kernel/clock'
import type { Topic } from '../../src/kernel/events/topic'
import { customers } from '../../src/modules/accounts/schema'
import { conversions } from '../../src/modules/affiliate/schema'
import { CashierCredited, CashierReversed } from '../../src/modules/cashier'
import { KycApproved } from '../../src/modules/kyc'
import { TradeClosed } from '../../src/modules/trading'
import { makeTestApp, type TestApp } from '../support/app'
import { closedTrade } from '../support/events'

const clock = new ManualClock(Date.UTC(2026, 10, 24, 9, 0, 0))
const T0 = clock.now()
let t: TestApp
let staff: string
let n = 0

type Ev =
  | { kind: 'kyc'; at: number }
  | { kind: 'deposit' | 'reversal'; at: number; tx: number; amount: number }
  | { kind: 'trade'; at: number; ticket: number; volume: number }

async function customer() {
  clock.set(T0)
  const email = `prop-${++n}@example.com`
  await t.request('POST', '/customer/register', {
    body: { email, password: 'prop-pass-1', name: 'P', attribution: { link: 'demo-home' } },
  })
  const [c] = await t.ctx.db.select().from(customers).where(eq(customers.email, email))
  const a = await t.request('POST', '/manager/accounts', {
    token: staff,
    body: { group: 'demo\\USD', password: 'prop-pass-1', customer_id: c.id },
  })
  return { id: c.id, login: a.json.login as number }
}

async function emit(c: { id: number; login: number }, e: Ev) {
  clock.set(T0 + e.at)
  const send = <T>(topic: Topic<T>, payload: T) => t.ctx.uow.run(async (_tx, w) => w.emit(topic, 1, payload))
  const money = (tx: number, amount: number) => ({
    transaction_id: tx,
    customer_id: c.id,
    login: c.login,
    method: 'card',
    provider: 'sandbox',
    amount_minor: Math.round(amount * 100),
    fee_minor: 0,
    currency: 'USD',
  })
  if (e.kind === 'kyc') await send(KycApproved, { customer_id: c.id, status: 'approved', risk_level: 'low' })
  else if (e.kind === 'deposit') await send(CashierCredited, money(e.tx, e.amount))
  else if (e.kind === 'reversal')
    await send(CashierReversed, { ...money(e.tx, e.amount), status: 'refunded' })
  else if (e.kind === 'trade')
    await send(
      TradeClosed,
      closedTrade({ ticket: e.ticket, login: c.login, volume: e.volume, at: T0 + e.at }),
    )
}

const rowsOf = async (id: number) =>
  (await t.ctx.db.select().from(conversions).where(eq(conversions.customerId, id)))
    .map((r) => ({
      key: r.key,
      value: r.valueMinor,
      currency: r.currency,
      // registration and KYC approval refer to the customer: the same for both once normalized
      ref: r.kind === 'registration' || r.kind === 'kyc_approval' ? 'self' : r.referenceId,
      at: r.eventTime,
    }))
    .sort((a, b) => a.key.localeCompare(b.key))

const event = fc.oneof(
  fc.record({ kind: fc.constant('kyc' as const) }),
  fc.record({
    kind: fc.constantFrom('deposit' as const, 'reversal' as const),
    tx: fc.integer({ min: 1, max: 4 }),
    amount: fc.integer({ min: 1, max: 500_000 }).map((c) => c / 100),
  }),
  fc.record({
    kind: fc.constant('trade' as const),
    ticket: fc.integer({ min: 1, max: 1e6 }),
    volume: fc.integer({ min: 1, max: 80 }),
  }),
)
// distinct times: two events of one instant would be ordered by their event ids, which the orders differ in
const history = fc
  .uniqueArray(fc.integer({ min: 1, max: 500_000 }), { minLength: 1, maxLength: 12 })
  .chain((times) =>
    fc.tuple(
      fc.tuple(...times.map((at) => event.map((e) => ({ ...e, at }) as Ev))),
      fc.array(fc.nat(), { minLength: times.length, maxLength: times.length }),
      fc.array(fc.boolean(), { minLength: times.length, maxLength: times.length }),
    ),
  )

beforeAll(async () => {
  t = await makeTestApp({ clock })
  staff = await t.staffToken()
  await t.request('PUT', '/manager/affiliate-settings', { token: staff, body: { active_trader_lots: 1 } })
})
afterAll(() => t.close())

test('out of order and twice gives the rows of once in time order', async () => {
  await fc.assert(
    fc.asyncProperty(history, async ([events, keys, twice]) => {
      staff = await t.staffToken()
      const ordered = await customer()
      const shuffled = await customer()
      for (const e of [...events].sort((a, b) => a.at - b.at)) await emit(ordered, e)
      await t.settle()
      // deliveries in a random order, some twice (a relay retry, a second instance, a provider's repeat)
      const order = events.map((e, i) => ({ e, k: keys[i] })).sort((a, b) => a.k - b.k)
      for (const [i, { e }] of order.entries()) {
        await emit(shuffled, e)
        if (twice[i]) await emit(shuffled, e)
        if (i % 3 === 2) await t.settle()
      }
      await t.settle()
      expect(await rowsOf(shuffled.id)).toEqual(await rowsOf(ordered.id))
    }),
    { numRuns: 30 },
  )
}, 120_000)
