// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { and, eq } from 'drizzle-orm'
import { outbox } from '../../src/kernel/events/schema'
import { conversionFacts } from '../../src/modules/affiliate/schema'
import { CashierCredited } from '../../src/modules/cashier'
import { makeTestApp, type TestApp } from '../support/app'

/**
 * One money type across modules (issue 42): every event that moves money carries integer minor units with
 * their currency, whatever the currency's decimals (JPY none, BTC eight); views alone show major units;
 * an event written in the earlier shape (major units) is read as the current one at its currency's
 * decimals. Through accounts (the ledger event), cashier and affiliate conversions (a referred customer's
 * deposits), with JPY and BTC accounts of a referred demo customer.
 */

let t: TestApp
let manager: string
let customerId: number
const logins: Record<'JPY' | 'BTC', number> = { JPY: 0, BTC: 0 }

beforeAll(async () => {
  t = await makeTestApp()
  manager = await t.staffToken()
  const referred = await t.ctx.db
    .select({ customerId: conversionFacts.customerId })
    .from(conversionFacts)
    .where(and(eq(conversionFacts.brandId, 1), eq(conversionFacts.kind, 'registration')))
  customerId = referred[0]!.customerId
  for (const currency of ['JPY', 'BTC'] as const) {
    const group = await t.request('POST', '/manager/groups', {
      token: manager,
      body: { name: `real\\${currency}`, account_mode: 'REAL', currency, leverage: 100, default_deposit: 0 },
    })
    expect(group.status).toBe(200)
    const account = await t.request('POST', '/manager/accounts', {
      token: manager,
      body: { group: `real\\${currency}`, password: 'units-pass-1', name: currency, customer_id: customerId },
    })
    expect(account.status).toBe(200)
    logins[currency] = account.json.login
  }
})
afterAll(() => t.close())

/** The payloads of a topic's events in the outbox, oldest first. */
const payloads = async (topic: string) =>
  (await t.ctx.db.select().from(outbox).where(eq(outbox.topic, topic))).map(
    (r) => JSON.parse(r.payload) as Record<string, unknown>,
  )

describe('integer minor units in every money event, any currency', () => {
  for (const [currency, amount, minor] of [
    ['JPY', 1234, 1234],
    ['BTC', 0.12345678, 12_345_678],
  ] as const)
    test(`a ${currency} deposit: the ledger event in ${currency}'s minor unit, the view in major units`, async () => {
      const login = logins[currency]
      const r = await t.request('POST', `/manager/accounts/${login}/balance`, {
        token: manager,
        body: { type: 'deposit', amount, comment: 'units' },
      })
      expect(r.status).toBe(200)
      expect(r.json.operation).toMatchObject({ amount, balance_after: amount, currency })
      const event = (await payloads('account.balance_operation')).filter((p) => p.login === login).at(-1)!
      expect(event).toMatchObject({
        amount_minor: minor,
        balance_after_minor: minor,
        credit_after_minor: 0,
        currency,
      })
      expect(event.amount).toBeUndefined()
      expect((await t.request('GET', `/manager/accounts/${login}`, { token: manager })).json.balance).toBe(
        amount,
      )
    })

  test("a referred customer's deposits count at their currency's decimals, in the current and the earlier event shape", async () => {
    const cases = [
      // the current shape: minor units as written
      { tx: 990_001, currency: 'JPY', payload: { amount_minor: 5000, fee_minor: 0 }, expected: 5000 },
      {
        tx: 990_002,
        currency: 'BTC',
        payload: { amount_minor: 1_500_000, fee_minor: 0 },
        expected: 1_500_000,
      },
      // the shape before issue 42, still in an outbox at an upgrade: major units at the currency's decimals
      { tx: 990_003, currency: 'JPY', payload: { amount: 7000, fee: 0 }, expected: 7000 },
      { tx: 990_004, currency: 'BTC', payload: { amount: 0.00012345, fee: 0 }, expected: 12_345 },
    ]
    for (const c of cases)
      await t.ctx.db.insert(outbox).values({
        brandId: 1,
        topic: CashierCredited.name,
        payload: JSON.stringify({
          transaction_id: c.tx,
          customer_id: customerId,
          login: logins[c.currency as 'JPY' | 'BTC'],
          method: 'card',
          provider: 'sandbox',
          currency: c.currency,
          ...c.payload,
        }),
        createdAt: Date.now(),
        nextAt: 0,
      })
    await t.settle()
    const facts = await t.ctx.db
      .select()
      .from(conversionFacts)
      .where(and(eq(conversionFacts.customerId, customerId), eq(conversionFacts.kind, 'deposit')))
    for (const c of cases)
      expect(facts.find((f) => f.reference === String(c.tx))).toMatchObject({
        valueMinor: c.expected,
        currency: c.currency,
      })
    // none of them was parked: both shapes parse
    const dead = await t.request('GET', '/manager/events/dead-letters', {
      token: await t.staffToken(2, 'admin-pass-1'),
    })
    expect(dead.json.rows.filter((r: { topic: string }) => r.topic === CashierCredited.name)).toEqual([])
  })
})
