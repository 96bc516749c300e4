// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { and, eq } from 'drizzle-orm'
import { outbox } from '../../src/kernel/events/schema'
import { AccountsPort } from '../../src/modules/accounts'
import { conversionFacts } from '../../src/modules/affiliate/schema'
import { CashierCredited } from '../../src/modules/cashier'
import { DEV_CASHIER_SECRETS } from '../../src/modules/cashier/config'
import { sandboxEvent, signSandbox } from '../../src/modules/cashier/providers/sandbox'
import { makeTestApp, type TestApp } from '../support/app'

/**
 * One money type across modules (issue 42): every event that moves money carries integer minor units with
 * their currency, whatever the currency's decimals (JPY none, BTC eight); views alone show major units;
 * an event written in the earlier shape (major units) is read as the current one at its currency's
 * decimals. Through accounts (the ledger event), cashier and affiliate conversions (a referred customer's
 * deposits), prop (a program priced in JPY or BTC) and copy trading (a JPY or BTC follower paying a USD
 * master), with JPY and BTC accounts of a referred demo customer.
 */

let t: TestApp
let manager: string
let customerId: number
const logins: Record<'JPY' | 'BTC', number> = { JPY: 0, BTC: 0 }

beforeAll(async () => {
  t = await makeTestApp()
  manager = await t.staffToken()
  // a customer the demo partner referred (affiliate demo: its registration is a conversion fact)
  customerId = (await t.ports.get(AccountsPort).customerByEmail(1, 'demo-referred-1@example.com'))!.id
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

  for (const [currency, amount, minor] of [
    ['JPY', 5432, 5432],
    ['BTC', 0.015, 1_500_000],
  ] as const)
    test(`a ${currency} deposit through the cashier: credited, and counted by the affiliate ledger in ${currency}'s minor unit`, async () => {
      const finance = await t.staffToken(2, 'admin-pass-1')
      const method = await t.request('PUT', '/manager/cashier/methods/card', {
        token: finance,
        body: {
          provider: 'sandbox',
          title: 'Card',
          deposit: true,
          withdrawal: true,
          currencies: ['USD', 'EUR', 'GBP', 'JPY', 'BTC'],
          min_amount: 0,
          max_amount: 1_000_000,
          enabled: true,
        },
      })
      expect(method.status).toBe(200)
      // deposits before KYC are capped per currency: this brand's cap for JPY and BTC
      const kyc = (await t.request('GET', '/manager/kyc/settings', { token: manager })).json
      const limits = { ...kyc.tiers.deposit_limit_unverified, JPY: 1_000_000, BTC: 1 }
      const saved = await t.request('PUT', '/manager/kyc/settings', {
        token: manager,
        body: { ...kyc, tiers: { ...kyc.tiers, deposit_limit_unverified: limits } },
      })
      if (saved.status !== 200) console.log(saved.text)
      expect(saved.status).toBe(200)
      const customer = await t.customerToken('demo-referred-1@example.com', 'referred-pass-1')
      const login = logins[currency]
      const before = (await t.request('GET', `/manager/accounts/${login}`, { token: manager })).json.balance
      const deposit = await t.request('POST', '/cashier/deposit', {
        token: customer,
        body: { login, method: 'card', amount },
      })
      expect(deposit.status).toBe(200)
      const token = /\/cashier\/sandbox\/pay\/([0-9a-f]+)/.exec(deposit.json.next.url)![1]
      // the provider's signed webhook, as the sandbox sends it once paid (amounts in minor units)
      const body = sandboxEvent(`evt-${token}`, 'payment.succeeded', {
        token: token!,
        reference: String(deposit.json.transaction.id),
        amount: minor,
        currency,
      })
      const signature = signSandbox(
        DEV_CASHIER_SECRETS.Demo!.sandbox![0]!,
        body,
        Math.floor(Date.now() / 1000),
      )
      const hook = await t.request('POST', '/cashier/webhook/sandbox', {
        body,
        headers: { 'content-type': 'application/json', 'sandbox-signature': signature },
      })
      expect(hook.status).toBe(200)
      let status = ''
      for (let i = 0; i < 100 && status !== 'credited'; i++) {
        await t.settle()
        const rows = (await t.request('GET', `/cashier/transactions?login=${login}`, { token: customer }))
          .json.rows
        status = rows.find((r: { id: number }) => r.id === deposit.json.transaction.id)?.status_name ?? ''
        if (status !== 'credited') await Bun.sleep(20)
      }
      expect(status).toBe('credited')
      expect((await t.request('GET', `/manager/accounts/${login}`, { token: manager })).json.balance).toBe(
        Number((before + amount).toFixed(8)),
      )
      const credited = (await payloads('cashier.credited')).filter((p) => p.login === login).at(-1)!
      expect(credited).toMatchObject({ amount_minor: minor, fee_minor: 0, currency })
      await t.settle()
      const [fact] = await t.ctx.db
        .select()
        .from(conversionFacts)
        .where(
          and(
            eq(conversionFacts.customerId, customerId),
            eq(conversionFacts.reference, String(deposit.json.transaction.id)),
          ),
        )
      expect(fact).toMatchObject({ kind: 'deposit', valueMinor: minor, currency })
    })
})

describe('prop: a program priced in JPY or BTC', () => {
  for (const [currency, price, minor] of [
    ['JPY', 5000, 5000],
    ['BTC', 0.001, 100_000],
  ] as const)
    test(`the fee taken and announced in ${currency}'s minor unit`, async () => {
      // the evaluation phase trades a DEMO account in the program's currency
      const group = await t.request('POST', '/manager/groups', {
        token: manager,
        body: {
          name: `prop\\eval\\${currency}`,
          account_mode: 'DEMO',
          currency,
          leverage: 100,
          default_deposit: currency === 'JPY' ? 1_000_000 : 1,
          self_service: 0,
        },
      })
      if (group.status !== 200) console.log(group.text)
      expect(group.status).toBe(200)
      const program = await t.request('POST', '/manager/prop/programs', {
        token: manager,
        body: {
          name: `Units ${currency}`,
          price,
          currency,
          active: true,
          steps: [
            {
              account_group: `prop\\eval\\${currency}`,
              phase_type: 0,
              rules: { profit_target_pct: 10, daily_loss_pct: 5, total_loss_pct: 10 },
            },
          ],
        },
      })
      if (program.status !== 200) console.log(program.text)
      expect(program.status).toBe(200)
      const customer = await t.customerToken('demo-referred-1@example.com', 'referred-pass-1')
      const payer = logins[currency]
      const before = (await t.request('GET', `/manager/accounts/${payer}`, { token: manager })).json.balance
      const buy = await t.request('POST', '/prop/challenge/buy', {
        token: customer,
        body: { program_id: program.json.id, payer_login: payer },
      })
      if (buy.status !== 200) console.log(buy.text)
      expect(buy.status).toBe(200)
      expect(buy.json.purchase).toMatchObject({ amount: price, currency })
      const after = (await t.request('GET', `/manager/accounts/${payer}`, { token: manager })).json.balance
      expect(after).toBe(Number((before - price).toFixed(8)))
      const fee = (await payloads('account.balance_operation'))
        .filter((p) => p.login === payer && p.comment === 'PROP_CHALLENGE_PURCHASE')
        .at(-1)!
      expect(fee).toMatchObject({ amount_minor: -minor, currency })
      const purchased = (await payloads('prop.purchased')).at(-1)!
      expect(purchased).toMatchObject({ purchase_id: buy.json.purchase.id, amount_minor: minor, currency })
    })
})

describe('copy trading: a JPY or BTC follower pays a USD master', () => {
  // the follower's currency per USD, and the quote that makes it
  for (const [currency, tick, perUsd] of [
    ['JPY', { symbol: 'USDJPY', bid: 150, ask: 150.02 }, 150],
    ['BTC', { symbol: 'BTCUSD', bid: 43_000, ask: 43_030 }, 1e8 / 43_000],
  ] as const)
    test(`the subscription fee leaves the follower in ${currency}'s minor unit and reaches the master in cents`, async () => {
      const demo = await t.customerToken()
      const dealer = await t.staffToken(3, 'dealer-pass-1')
      const demoId = (await t.request('GET', '/customer/me', { token: demo })).json.id
      expect(
        (await t.request('POST', '/market/quotes', { token: dealer, body: { ticks: [tick] } })).status,
      ).toBe(200)
      const masterLogin = (
        await t.request('POST', '/manager/accounts', {
          token: manager,
          body: { group: 'real\\USD', password: 'units-pass-1', customer_id: demoId },
        })
      ).json.login as number
      const master = await t.request('POST', '/copytrade/master', {
        token: demo,
        body: {
          login: masterLogin,
          name: `Units ${currency}`,
          reward_policy: { reward_type: 0, amount: 30, period_days: 30 },
          allowed_follower_modes: 2,
          public: 1,
        },
      })
      expect(master.status).toBe(200)
      const follower = await t.customerToken('demo-referred-1@example.com', 'referred-pass-1')
      const login = logins[currency]
      // enough for the fee (the prop purchase above spent some of it)
      await t.request('POST', `/manager/accounts/${login}/balance`, {
        token: manager,
        body: { type: 'deposit', amount: currency === 'JPY' ? 100_000 : 1, comment: 'units' },
      })
      await t.settle()
      await t.request('POST', '/copytrade/follower', { token: follower, body: { login } })
      // before subscribing: the first period is charged in the subscription's own transaction
      const before = (await t.request('GET', `/manager/accounts/${login}`, { token: manager })).json.balance
      const sub = await t.request('POST', '/copytrade/subscription', {
        token: follower,
        body: {
          follower_login: login,
          master_id: master.json.id,
          policy_version: master.json.policy_version,
        },
      })
      expect(sub.status).toBe(200)
      await t.settle()
      await t.runJob('copytrade.settle')
      await t.settle()
      const rewards = (
        await t.request('GET', `/copytrade/subscription/${sub.json.id}/rewards`, { token: follower })
      ).json.rows
      expect(rewards).toMatchObject([
        { reward_name: 'SUBSCRIPTION_FEE', base: 30, currency, payout_currency: 'USD', status: 'settled' },
      ])
      const ops = await payloads('account.balance_operation')
      const out = ops.filter((p) => p.login === login && p.reason === 'TR_REASON_COPY_REWARD').at(-1)!
      const into = ops.filter((p) => p.login === masterLogin && p.reason === 'TR_REASON_COPY_REWARD').at(-1)!
      // (fields read one by one: bun's toMatchObject with an asymmetric matcher writes it into the object)
      expect(out.currency).toBe(currency)
      expect(Number.isInteger(out.amount_minor)).toBe(true)
      expect(Math.abs(-(out.amount_minor as number) / 30 / perUsd - 1)).toBeLessThan(0.01)
      // converted back to cents at the other side of the quote: whole cents
      expect(into.currency).toBe('USD')
      expect(Number.isInteger(into.amount_minor)).toBe(true)
      expect(Math.abs((into.amount_minor as number) - 3000)).toBeLessThanOrEqual(3)
      const after = (await t.request('GET', `/manager/accounts/${login}`, { token: manager })).json.balance
      expect(after).toBeCloseTo(before + (out.amount_minor as number) / (currency === 'JPY' ? 1 : 1e8), 8)
    })
})
