// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
// Affiliate conversions (issue 30): rules 1-4 of spec 4.17 with the events of registration, KYC, the
// cashier and trading going through the real outbox and relay, in order, reversed and duplicated; the
// rule-4 upgrade of release 1.25.244; a customer nobody referred costs no row.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { and, desc, eq, sql } from 'drizzle-orm'
import { ManualClock } from '../../src/kernel/clock'
import type { Topic } from '../../src/kernel/events/topic'
import { CustomerRegistered } from '../../src/modules/accounts'
import { customers } from '../../src/modules/accounts/schema'
import { conversionFacts, conversions } from '../../src/modules/affiliate/schema'
import { decisions } from '../../src/modules/attribution/schema'
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

async function referred(link: string | null = 'demo-spring') {
  const email = `conv-${++n}@example.com`
  const r = await t.request('POST', '/customer/register', {
    body: { email, password: 'conv-pass-1', name: 'Conv', ...(link ? { attribution: { link } } : {}) },
  })
  expect(r.status).toBe(200)
  const [c] = await t.ctx.db.select().from(customers).where(eq(customers.email, email))
  return c.id
}

const emitAt = async <T>(at: number, topic: Topic<T>, payload: T) => {
  clock.set(at)
  await t.ctx.uow.run(async (_tx, work) => work.emit(topic, 1, payload))
}
const money = (customer_id: number, transaction_id: number, amount: number) => ({
  transaction_id,
  customer_id,
  login: 100001,
  method: 'card',
  provider: 'sandbox',
  amount_minor: Math.round(amount * 100),
  fee_minor: 0,
  currency: 'USD',
})
const rows = async (customerId: number) =>
  (await t.ctx.db.select().from(conversions).where(eq(conversions.customerId, customerId))).sort((a, b) =>
    a.key.localeCompare(b.key),
  )
const row = async (customerId: number, key: string) => (await rows(customerId)).find((r) => r.key === key)

beforeAll(async () => {
  t = await makeTestApp({ clock })
  staff = await t.staffToken()
})
afterAll(() => t.close())

describe('rules 1-3', () => {
  test('registration and KYC approval exist once with their first occurrence', async () => {
    const id = await referred()
    await t.settle()
    const reg = await row(id, 'registration')
    expect(reg).toMatchObject({ kind: 'registration', referenceId: String(id), valueMinor: null })
    expect(reg!.linkId).toBeGreaterThan(0)
    await emitAt(T0 + 1_000, KycApproved, { customer_id: id, status: 'approved', risk_level: 'low' })
    await emitAt(T0 + 9_000, KycApproved, { customer_id: id, status: 'approved', risk_level: 'low' })
    await emitAt(T0 + 500, CustomerRegistered, { customer_id: id, attribution: null }) // a replayed registration
    await t.settle()
    const kinds = (await rows(id)).map((r) => r.kind)
    expect(kinds.filter((k) => k === 'kyc_approval')).toHaveLength(1)
    expect(kinds.filter((k) => k === 'registration')).toHaveLength(1)
    expect((await row(id, 'kyc_approval'))!.eventTime).toBe(T0 + 1_000)
  })

  test('one Deposit row per cashier transaction; the first deposit is the earliest; reversals are negative rows', async () => {
    const id = await referred()
    await emitAt(T0 + 10_000, CashierCredited, money(id, 9001, 100))
    await emitAt(T0 + 20_000, CashierCredited, money(id, 9002, 50.5))
    await emitAt(T0 + 20_001, CashierCredited, money(id, 9002, 50.5)) // the same transaction reported twice
    await emitAt(T0 + 30_000, CashierReversed, { ...money(id, 9002, 50.5), status: 'refunded' })
    await t.settle()
    const r = await rows(id)
    expect(r.filter((x) => x.kind === 'deposit').map((x) => [x.referenceId, x.valueMinor])).toEqual([
      ['9001', 10_000],
      ['9002', 5_050],
    ])
    expect(await row(id, 'first_deposit')).toMatchObject({
      referenceId: '9001',
      valueMinor: 10_000,
      currency: 'USD',
    })
    expect(await row(id, 'deposit_reversal:9002')).toMatchObject({ valueMinor: -5_050 })
    const list = await t.request('GET', `/manager/affiliate-conversions?customer_id=${id}&kind=deposit`, {
      token: staff,
    })
    expect(list.json.rows.reduce((s: number, x: { value: number }) => s + x.value, 0)).toBe(150.5)
  })

  test('events in reverse order end where the ordered replay ends (rule 4: the earliest deposit wins)', async () => {
    const id = await referred()
    await emitAt(T0 + 50_000, CashierCredited, money(id, 9102, 70))
    await t.settle()
    expect(await row(id, 'first_deposit')).toMatchObject({ referenceId: '9102' })
    await emitAt(T0 + 40_000, CashierCredited, money(id, 9101, 30))
    await t.settle()
    expect(await row(id, 'first_deposit')).toMatchObject({
      referenceId: '9101',
      valueMinor: 3_000,
      eventTime: T0 + 40_000,
    })
    const detail = await t.request(
      'GET',
      `/manager/affiliate-conversions/${(await row(id, 'first_deposit'))!.id}`,
      { token: staff },
    )
    expect(
      detail.json.facts.map((f: { kind: string; reference: string }) => `${f.kind}:${f.reference}`),
    ).toEqual([`registration:${id}`, 'deposit:9101', 'deposit:9102'])
  })

  test('a redelivered event changes nothing (the consumer is idempotent per event)', async () => {
    const id = await referred()
    await emitAt(T0 + 60_000, CashierCredited, money(id, 9201, 10))
    await t.settle()
    const consumer = t.ctx.events
      .consumersOf(CashierCredited.name)
      .find((c) => c.name === 'affiliate.deposit-credited')!
    const [fact] = await t.ctx.db
      .select()
      .from(conversionFacts)
      .where(and(eq(conversionFacts.customerId, id), eq(conversionFacts.kind, 'deposit')))
    const delivered = {
      id: fact.eventId,
      topic: CashierCredited.name,
      brandId: 1,
      payload: money(id, 9201, 10),
      createdAt: T0 + 60_000,
    }
    for (let i = 0; i < 3; i++) await t.ctx.db.transaction((tx) => consumer.handle!(delivered, tx))
    expect((await rows(id)).filter((r) => r.kind === 'deposit')).toHaveLength(1)
    expect(
      (await t.ctx.db.select().from(conversionFacts).where(eq(conversionFacts.customerId, id))).filter(
        (f) => f.kind === 'deposit',
      ),
    ).toHaveLength(1)
  })

  test('active trader: the first closed trade, or the closed lots the brand asks for, on REAL accounts only', async () => {
    const id = await referred()
    const accountIn = async (group: string) => {
      const acct = await t.request('POST', '/manager/accounts', {
        token: staff,
        body: { group, password: 'conv-pass-1', customer_id: id },
      })
      expect(acct.status).toBe(200)
      return acct.json.login as number
    }
    const [demo, login] = [await accountIn('demo\\USD'), await accountIn('real\\USD')]
    const trade = (ticket: number, volume: number, at: number, on = login) =>
      emitAt(at, TradeClosed, closedTrade({ ticket, login: on, volume, at }))
    expect(
      (
        await t.request('PUT', '/manager/affiliate-settings', {
          token: staff,
          body: { active_trader_lots: 1 },
        })
      ).status,
    ).toBe(200)
    // five lots on the demo account: no money at stake, no active trader
    await trade(7000, 500, T0 + 50_000, demo)
    await t.settle()
    expect(await row(id, 'active_trader')).toBeUndefined()
    await trade(7001, 50, T0 + 100_000)
    await t.settle()
    expect(await row(id, 'active_trader')).toBeUndefined()
    await trade(7003, 30, T0 + 300_000)
    await trade(7002, 60, T0 + 200_000) // arrives after a later one: 0.5 + 0.6 lots reach 1 lot at 7002
    await t.settle()
    expect(await row(id, 'active_trader')).toMatchObject({
      referenceId: '7002',
      valueMinor: 110,
      eventTime: T0 + 200_000,
    })
    await trade(7004, 500, T0 + 400_000)
    await t.settle()
    // a trade after the row changes no conversion; it is still a fact (RevShare and a plan's preview on
    // past data pay on every trade, issue 44)
    expect(await row(id, 'active_trader')).toMatchObject({ referenceId: '7002' })
    expect(
      (await t.ctx.db.select().from(conversionFacts).where(eq(conversionFacts.customerId, id))).filter(
        (f) => f.reference === '7004',
      ),
    ).toHaveLength(1)
    await t.request('PUT', '/manager/affiliate-settings', { token: staff, body: { active_trader_lots: 0 } })
  })

  test('a customer nobody referred gets no rows and costs no delivery', async () => {
    const id = await referred(null)
    await emitAt(T0 + 1_000, CashierCredited, money(id, 9301, 10))
    await t.settle()
    expect(await rows(id)).toHaveLength(0)
    expect(
      await t.ctx.db.select().from(conversionFacts).where(eq(conversionFacts.customerId, id)),
    ).toHaveLength(0)
  })
})

describe('self-referral', () => {
  test("an affiliate registering through its own link refers nobody: no rows, no commission's facts", async () => {
    // a hostile client's probe: the affiliate's own customer account earned its CPA
    const email = 'Partner@Example.com'
    const r = await t.request('POST', '/customer/register', {
      body: {
        email,
        password: 'self-pass-1',
        name: 'Self',
        attribution: { link: 'demo-spring', utm_source: 'x' },
      },
    })
    expect(r.status).toBe(200)
    const [c] = await t.ctx.db.select().from(customers).where(eq(customers.email, email.toLowerCase()))
    await emitAt(T0 + 2_000, CashierCredited, money(c!.id, 9401, 500))
    await t.settle()
    expect(await rows(c!.id)).toHaveLength(0)
    expect(
      await t.ctx.db.select().from(conversionFacts).where(eq(conversionFacts.customerId, c!.id)),
    ).toHaveLength(0)
    const [d] = await t.ctx.db.select().from(decisions).orderBy(desc(decisions.id)).limit(1)
    expect(d!.wonBy).toBe('self_referral')
    // anyone else through the same link is referred as before
    const other = await referred('demo-spring')
    await emitAt(T0 + 3_000, CashierCredited, money(other, 9402, 500))
    await t.settle()
    expect(await row(other, 'first_deposit')).toBeDefined()
  })

  test('a +tag on its own address is still the affiliate itself', async () => {
    const email = 'partner+again@example.com'
    const r = await t.request('POST', '/customer/register', {
      body: { email, password: 'self-pass-2', name: 'Self', attribution: { link: 'demo-spring' } },
    })
    expect(r.status).toBe(200)
    await t.settle()
    const [d] = await t.ctx.db.select().from(decisions).orderBy(desc(decisions.id)).limit(1)
    expect(d!.wonBy).toBe('self_referral')
  })
})

describe('rule 4 upgrade (release 1.25.244)', () => {
  test('rows holding the deposit written last are corrected; running it again changes nothing', async () => {
    const upgrade = readFileSync('drizzle/0015_first_deposit_earliest_1_25_244.sql', 'utf8')
    const now = clock.now()
    const base = { brandId: 1, affiliateId: 1, linkId: null, currency: 'USD', createdAt: now, updatedAt: now }
    // the old shape: customer 900001's first_deposit holds its latest deposit; 900002's is right already
    await t.ctx.db.insert(conversions).values([
      {
        ...base,
        customerId: 900001,
        kind: 'deposit',
        key: 'deposit:1',
        valueMinor: 100,
        referenceId: '1',
        eventTime: 1_000,
        eventId: 1,
      },
      {
        ...base,
        customerId: 900001,
        kind: 'deposit',
        key: 'deposit:2',
        valueMinor: 200,
        referenceId: '2',
        eventTime: 2_000,
        eventId: 2,
      },
      {
        ...base,
        customerId: 900001,
        kind: 'deposit',
        key: 'deposit:3',
        valueMinor: 300,
        referenceId: '3',
        eventTime: 3_000,
        eventId: 3,
      },
      {
        ...base,
        customerId: 900001,
        kind: 'first_deposit',
        key: 'first_deposit',
        valueMinor: 300,
        referenceId: '3',
        eventTime: 3_000,
        eventId: 3,
      },
      {
        ...base,
        customerId: 900002,
        kind: 'deposit',
        key: 'deposit:4',
        valueMinor: 400,
        referenceId: '4',
        eventTime: 4_000,
        eventId: 4,
      },
      {
        ...base,
        customerId: 900002,
        kind: 'first_deposit',
        key: 'first_deposit',
        valueMinor: 400,
        referenceId: '4',
        eventTime: 4_000,
        eventId: 4,
      },
    ])
    const firsts = async () =>
      (
        await t.ctx.db
          .select()
          .from(conversions)
          .where(and(eq(conversions.kind, 'first_deposit'), sql`customer_id in (900001, 900002)`))
      )
        .map((r) => [r.customerId, r.referenceId, r.valueMinor, r.eventTime])
        .sort()
    for (let run = 0; run < 2; run++) {
      await t.ctx.db.run(sql.raw(upgrade))
      expect(await firsts()).toEqual([
        [900001, '1', 100, 1_000],
        [900002, '4', 400, 4_000],
      ])
    }
  })
})
