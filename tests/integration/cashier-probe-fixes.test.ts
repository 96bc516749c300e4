// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
// What a hostile probe of the cashier and KYC found (issue 43, .tmp/probe-cashier): refunds and
// chargebacks dropped before a deposit was credited (then credited in full), abandoned payment sessions
// counting toward the KYC limit for ever and never cancellable, reconciliation starving past 200
// candidates, a KYC limit with more decimals than its currency read as 0, wire instructions in hundredths
// of any currency, blank reasons and fees rounded silently.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { and, eq } from 'drizzle-orm'
import { ManualClock } from '../../src/kernel/clock'
import { fromMinor } from '../../src/modules/accounts'
import { walkById } from '../../src/modules/cashier/backoffice/reconcile'
import type { CashierCtx } from '../../src/modules/cashier/context'
import { type SandboxEventType, sandboxEvent, signSandbox } from '../../src/modules/cashier/providers/sandbox'
import { wireProvider } from '../../src/modules/cashier/providers/wire'
import { cashierTransactions } from '../../src/modules/cashier/schema'
import { kycSettings } from '../../src/modules/kyc/schema'
import { makeTestApp, type TestApp } from '../support/app'
import { SANDBOX_SECRET } from '../support/cashier'

const LOGIN = 100001
const clock = new ManualClock(Date.now())
let t: TestApp
let customer: string
let manager: string
let defaults: { steps: unknown[]; tiers: Record<string, unknown> }

beforeAll(async () => {
  t = await makeTestApp({ clock })
  customer = await t.customerToken()
  manager = await t.staffToken()
  defaults = (await t.request('GET', '/manager/kyc/settings', { token: manager })).json
})
afterAll(() => t.close())

/** Moves the clock on; the sessions (12 h) are signed in again. */
async function later(ms: number) {
  clock.advance(ms)
  customer = await t.customerToken()
  manager = await t.staffToken()
}
const balance = async () =>
  (await t.request('GET', `/account/me?login=${LOGIN}`, { token: customer })).json.balance as number
const deposit = async (amount: number, method = 'card') => {
  const r = await t.request('POST', '/cashier/deposit', {
    token: customer,
    body: { login: LOGIN, method, amount },
  })
  expect(r.status).toBe(200)
  return { id: r.json.transaction.id as number, url: r.json.next?.url as string }
}
const staffTx = async (id: number) =>
  (await t.request('GET', `/manager/cashier/transactions/${id}`, { token: manager })).json
const mine = async (id: number) =>
  (await t.request('GET', `/cashier/transactions/${id}`, { token: customer })).json
/** A signed sandbox webhook about deposit `id`, on the app's clock. */
function hook(eventId: string, type: SandboxEventType, id: number, minor: number) {
  const body = sandboxEvent(eventId, type, {
    token: `tok${id}`,
    reference: String(id),
    amount: minor,
    currency: 'USD',
  })
  return t.request('POST', '/cashier/webhook/sandbox', {
    body,
    headers: {
      'content-type': 'application/json',
      'sandbox-signature': signSandbox(SANDBOX_SECRET, body, Math.floor(clock.now() / 1000)),
    },
  })
}
const resolve = (id: number, decision: 'credit' | 'fail') =>
  t.request('POST', `/manager/cashier/transactions/${id}/resolve`, {
    token: manager,
    body: { decision, note: 'reviewed' },
  })
/** Pays on the hosted sandbox page; its webhook goes to http://localhost, where nothing listens (lost). */
const pay = (url: string) => t.request('POST', new URL(url).pathname, { body: { action: 'pay' } })
async function saveTiers(tiers: Record<string, unknown>) {
  return t.request('PUT', '/manager/kyc/settings', {
    token: manager,
    body: { ...defaults, tiers: { ...defaults.tiers, ...tiers } },
  })
}

describe('a refund or chargeback before the deposit is credited', () => {
  test('in manual review: recorded, flagged, and a staff credit takes only what the provider still holds', async () => {
    const { id } = await deposit(50)
    expect((await hook(`rv-cap-${id}`, 'payment.succeeded', id, 4000)).status).toBe(200)
    expect((await staffTx(id)).status_name).toBe('manual_review')
    const r = await hook(`rv-ref-${id}`, 'payment.refunded', id, 1500)
    expect([r.status, r.json.duplicate]).toEqual([200, false])
    const v = await staffTx(id)
    expect(v.status_name).toBe('manual_review')
    expect(v.flagged).toBe(true)
    expect(v.provider_amount).toBe(25)
    expect(v.staff_note).toContain('refunded of 15 USD')
    const last = v.history.at(-1)
    expect([last.from, last.to, last.actor]).toEqual([9, 9, 'provider:sandbox'])
    expect(last.note).toContain('refunded of 15 USD before the deposit was credited')
    const before = await balance()
    const credited = await resolve(id, 'credit')
    expect([credited.status, credited.json.status_name, credited.json.amount]).toEqual([200, 'credited', 25])
    expect(await balance()).toBe(before + 25)
  })

  for (const type of ['payment.refunded', 'payment.disputed'] as const)
    test(`in manual review, ${type} of everything: the credit is refused (409), the deposit closes as failed`, async () => {
      const { id } = await deposit(50)
      await hook(`rv-cap-${type}-${id}`, 'payment.succeeded', id, 4000)
      await hook(`rv-all-${type}-${id}`, type, id, 4000)
      const v = await staffTx(id)
      expect([v.status_name, v.flagged, v.provider_amount]).toEqual(['manual_review', true, 0])
      const before = await balance()
      const refused = await resolve(id, 'credit')
      expect([refused.status, refused.json.error]).toEqual([409, 'TRANSACTION_STATE_CONFLICT'])
      expect(refused.json.message).toContain('holds nothing')
      expect((await resolve(id, 'fail')).json.status_name).toBe('failed')
      expect(await balance()).toBe(before)
    })

  for (const type of ['payment.refunded', 'payment.disputed'] as const)
    test(`${type} before the capture (out of order): held in review, the capture adds to it, nothing credited`, async () => {
      const { id } = await deposit(30)
      const before = await balance()
      expect((await hook(`ooo-rev-${type}-${id}`, type, id, 3000)).status).toBe(200)
      let v = await staffTx(id)
      expect([v.status_name, v.flagged, v.provider_amount]).toEqual(['manual_review', true, -30])
      // the customer sees it under review; no status went backwards
      expect((await mine(id)).reason).toBe('the payment is being reviewed')
      expect((await hook(`ooo-cap-${type}-${id}`, 'payment.succeeded', id, 3000)).status).toBe(200)
      v = await staffTx(id)
      expect([v.status_name, v.flagged, v.provider_amount, v.provider_currency]).toEqual([
        'manual_review',
        true,
        0,
        'USD',
      ])
      expect(await balance()).toBe(before)
      expect((await resolve(id, 'credit')).status).toBe(409)
      expect(await balance()).toBe(before)
      const stages = v.history.map((h: { to: number }) => h.to)
      expect(stages).toEqual([0, 1, 9, 9])
    })

  test('a partial refund before the capture: the review credits what is left, once', async () => {
    const { id } = await deposit(30)
    await hook(`part-ref-${id}`, 'payment.refunded', id, 1000)
    await hook(`part-cap-${id}`, 'payment.succeeded', id, 3000)
    // the capture repeated under another event id adds nothing more
    await hook(`part-cap2-${id}`, 'payment.succeeded', id, 3000)
    expect((await staffTx(id)).provider_amount).toBe(20)
    const before = await balance()
    const r = await resolve(id, 'credit')
    expect([r.json.status_name, r.json.amount]).toEqual(['credited', 20])
    expect(await balance()).toBe(before + 20)
  })
})

describe('payment sessions expire; the customer cancels an unpaid deposit', () => {
  const limitRemaining = async () =>
    (await t.request('GET', `/cashier/methods?login=${LOGIN}`, { token: customer })).json
      .deposit_limit_remaining as number

  test('a session left unpaid for 24 hours ends: cancelled, off the KYC limit, its page refuses payment', async () => {
    // nothing else open counts toward the limit meanwhile
    await t.ctx.db
      .update(cashierTransactions)
      .set({ status: 5 })
      .where(and(eq(cashierTransactions.kind, 'deposit'), eq(cashierTransactions.status, 1)))
    const start = await limitRemaining()
    const d = await deposit(100)
    expect(await limitRemaining()).toBe(start - 100)
    await later(23 * 3_600_000)
    await t.runJob('cashier.expire')
    expect((await mine(d.id)).status_name).toBe('pending_payment')
    await later(2 * 3_600_000)
    await t.runJob('cashier.expire')
    const v = await mine(d.id)
    expect([v.status_name, v.reason]).toEqual(['cancelled', 'the payment session expired unpaid'])
    expect(await limitRemaining()).toBe(start)
    const late = await pay(d.url)
    expect([late.status, late.json.error]).toEqual([409, 'PAYMENT_STATE_CONFLICT'])
  })

  test('one paid at the provider whose webhook was lost is credited by the expiry, not cancelled', async () => {
    const d = await deposit(40)
    expect((await pay(d.url)).status).toBe(200)
    expect((await mine(d.id)).status_name).toBe('pending_payment')
    const before = await balance()
    await later(25 * 3_600_000)
    await t.runJob('cashier.expire')
    await t.runJob('cashier.inbox')
    expect((await mine(d.id)).status_name).toBe('credited')
    expect(await balance()).toBe(before + 40)
  })

  test('the customer cancels an unpaid card deposit: ended at the provider first, answered the same again', async () => {
    const d = await deposit(60)
    const r = await t.request('POST', `/cashier/transactions/${d.id}/cancel`, { token: customer })
    expect([r.status, r.json.status_name, r.json.reason]).toEqual([
      200,
      'cancelled',
      'cancelled by the customer',
    ])
    expect(r.json.history.at(-1).actor).toBe('customer')
    const again = await t.request('POST', `/cashier/transactions/${d.id}/cancel`, { token: customer })
    expect([again.status, again.json.status_name]).toEqual([200, 'cancelled'])
    const late = await pay(d.url)
    expect([late.status, late.json.error]).toEqual([409, 'PAYMENT_STATE_CONFLICT'])
  })

  test('a deposit paid at the provider is not the customer to cancel (409); it is credited', async () => {
    const d = await deposit(70)
    await pay(d.url)
    const r = await t.request('POST', `/cashier/transactions/${d.id}/cancel`, { token: customer })
    expect([r.status, r.json.error]).toEqual([409, 'TRANSACTION_STATE_CONFLICT'])
    await t.runJob('cashier.inbox')
    expect((await mine(d.id)).status_name).toBe('credited')
    const credited = await t.request('POST', `/cashier/transactions/${d.id}/cancel`, { token: customer })
    expect([credited.status, credited.json.error]).toEqual([409, 'TRANSACTION_STATE_CONFLICT'])
  })

  test('a wire deposit waiting for the transfer is cancelled at once', async () => {
    const d = await deposit(100, 'wire')
    const r = await t.request('POST', `/cashier/transactions/${d.id}/cancel`, { token: customer })
    expect([r.status, r.json.status_name]).toEqual([200, 'cancelled'])
  })
})

describe('reconciliation visits every candidate', () => {
  test('a lost webhook behind more than 200 older open deposits is applied', async () => {
    expect((await saveTiers({ deposit_unlimited_after: [] })).status).toBe(200)
    for (let i = 0; i < 210; i++) await deposit(10)
    clock.advance(1000)
    const x = await deposit(10)
    await pay(x.url)
    await later(10 * 60_000)
    await t.runJob('cashier.reconcile')
    await t.runJob('cashier.inbox')
    expect((await mine(x.id)).status_name).toBe('credited')
    expect((await saveTiers({})).status).toBe(200)
  })

  test('walkById: at most maxRows a run, from where the last stopped, every row in turn', async () => {
    const ctx = { db: t.ctx.db, store: t.ctx.store } as unknown as CashierCtx
    const where = eq(cashierTransactions.kind, 'deposit')
    const all = (await t.ctx.db.select({ id: cashierTransactions.id }).from(cashierTransactions).where(where))
      .map((r) => r.id)
      .sort((a, b) => a - b)
    const seen: number[] = []
    const runs = Math.ceil(all.length / 37)
    for (let i = 0; i < runs; i++) {
      const n = await walkById(ctx, 'test:walk', where, async (r) => void seen.push(r.id), 37)
      expect(n).toBeLessThanOrEqual(37)
    }
    expect(seen).toEqual(all)
    // then from the first again
    const next: number[] = []
    await walkById(ctx, 'test:walk', where, async (r) => void next.push(r.id), 5)
    expect(next).toEqual(all.slice(0, 5))
  })
})

describe('the KYC deposit limit', () => {
  test('more decimals than its currency, or past 10^12: refused at save, naming the field', async () => {
    for (const [limits, field] of [
      [{ USD: 1999.999 }, 'USD'],
      [{ JPY: 1000.5 }, 'JPY'],
      [{ USD: 1e16 }, 'USD'],
    ] as const) {
      const r = await saveTiers({ deposit_limit_unverified: limits })
      expect([r.status, r.json.error]).toEqual([400, 'INVALID_DATA'])
      expect(r.json.message).toStartWith(`tiers.deposit_limit_unverified.${field}:`)
    }
    const ok = await saveTiers({ deposit_limit_unverified: { USD: 2500.5, JPY: 300000, BTC: 0.12345678 } })
    expect(ok.status).toBe(200)
    expect((await saveTiers({})).status).toBe(200)
  })

  test('one stored before that check: the deposit and the methods read it alike (never as 0)', async () => {
    const settings = {
      ...defaults,
      tiers: { ...defaults.tiers, deposit_limit_unverified: { USD: 1e9 + 0.001 } },
    }
    await t.ctx.db
      .update(kycSettings)
      .set({ settings: JSON.stringify(settings) })
      .where(eq(kycSettings.brandId, 1))
    const m = await t.request('GET', `/cashier/methods?login=${LOGIN}`, { token: customer })
    expect(m.json.deposit_limit_remaining).toBeGreaterThan(1e8)
    const d = await t.request('POST', '/cashier/deposit', {
      token: customer,
      body: { login: LOGIN, method: 'card', amount: 10 },
    })
    expect(d.status).toBe(200)
    expect((await saveTiers({})).status).toBe(200)
  })

  test('a number question whose min is above its max is refused', async () => {
    const r = await t.request('PUT', '/manager/kyc/settings', {
      token: manager,
      body: {
        ...defaults,
        steps: [
          ...defaults.steps,
          {
            code: 'extra',
            title: 'Extra',
            questions: [{ key: 'q', label: 'Q', type: 'number', min: 10, max: 1 }],
          },
        ],
      },
    })
    expect([r.status, r.json.error]).toEqual([400, 'INVALID_DATA'])
    expect(r.json.message).toStartWith(`steps.${defaults.steps.length}.questions.0.min:`)
  })
})

test('wire instructions name the amount in the currency decimals', async () => {
  const w = wireProvider({ name: 'B', iban: 'GB33BUKB20201555555555', bic: 'BUKBGB22', holder: 'H' })
  for (const [currency, minor] of [
    ['USD', 50000],
    ['JPY', 50000],
    ['KWD', 50000],
    ['BTC', 50000000],
  ] as const) {
    const r = await w.startDeposit(
      { transactionId: 7, brandId: 1, amount: minor, currency, notifyUrl: '', returnUrl: '' },
      '',
    )
    expect((r.next as { text: string }).text).toStartWith(
      `Transfer ${fromMinor(minor, currency)} ${currency} `,
    )
  }
})

describe('small validation', () => {
  test('a blank reason to reject a withdrawal or fail its payout is refused, naming reason', async () => {
    expect((await saveTiers({ withdrawal_after: [] })).status).toBe(200)
    const w = await t.request('POST', '/cashier/withdrawal', {
      token: customer,
      body: { login: LOGIN, method: 'wire', amount: 50 },
    })
    expect(w.status).toBe(200)
    const id = w.json.transaction.id
    for (const reason of ['   ', ' \n\t '])
      for (const path of ['reject', 'payout-failed']) {
        const r = await t.request('POST', `/manager/cashier/transactions/${id}/${path}`, {
          token: manager,
          body: { reason },
        })
        expect([r.status, r.json.error]).toEqual([400, 'INVALID_DATA'])
        expect(r.json.message).toContain('reason')
      }
    expect((await mine(id)).status_name).toBe('pending_approval')
    expect((await saveTiers({})).status).toBe(200)
  })

  test('a fee_percent finer than a basis point is refused; one that fits is answered as stored', async () => {
    const body = {
      provider: 'sandbox',
      title: 'Probe',
      deposit: true,
      withdrawal: false,
      currencies: ['USD'],
      min_amount: 1,
      max_amount: 1000,
      enabled: true,
    }
    const fine = await t.request('PUT', '/manager/cashier/methods/probe_fee', {
      token: manager,
      body: { ...body, fee_percent: 0.015 },
    })
    expect([fine.status, fine.json.error]).toEqual([400, 'INVALID_DATA'])
    expect(fine.json.message).toStartWith('fee_percent:')
    const ok = await t.request('PUT', '/manager/cashier/methods/probe_fee', {
      token: manager,
      body: { ...body, fee_percent: 1.25 },
    })
    expect([ok.status, ok.json.fee_percent]).toEqual([200, 1.25])
    const m = await t.request('GET', `/cashier/methods?login=${LOGIN}`, { token: customer })
    expect(m.json.methods.find((x: { code: string }) => x.code === 'probe_fee').fee_percent).toBe(1.25)
  })
})

describe('a withdrawal approved after a chargeback', () => {
  test('is not paid out while the account owes money; rejected, it gives the money back', async () => {
    expect((await saveTiers({ withdrawal_after: [], deposit_unlimited_after: [] })).status).toBe(200)
    const d = await deposit(300)
    expect((await hook(`evt-debt-${d.id}-1`, 'payment.succeeded', d.id, 30_000)).status).toBe(200)
    expect((await mine(d.id)).status_name).toBe('credited')
    const start = await balance()
    // the whole balance but the deposit is withdrawn, then the deposit is charged back: it owes 300 - x
    const w = await t.request('POST', '/cashier/withdrawal', {
      token: customer,
      body: { login: LOGIN, method: 'wire', amount: start - 100 },
    })
    expect(w.status).toBe(200)
    const id = w.json.transaction.id as number
    expect((await hook(`evt-debt-${d.id}-2`, 'payment.disputed', d.id, 30_000)).status).toBe(200)
    expect(await balance()).toBe(-200)
    const approve = await t.request('POST', `/manager/cashier/transactions/${id}/approve`, {
      token: manager,
      body: {},
    })
    expect([approve.status, approve.json.error]).toEqual([409, 'TRANSACTION_STATE_CONFLICT'])
    expect(approve.json.message).toContain(`account ${LOGIN} owes 200 USD`)
    expect((await staffTx(id)).status_name).toBe('pending_approval')
    const rejected = await t.request('POST', `/manager/cashier/transactions/${id}/reject`, {
      token: manager,
      body: { reason: 'the deposit was charged back' },
    })
    expect(rejected.status).toBe(200)
    expect(await balance()).toBe(start - 300)
    expect((await saveTiers({})).status).toBe(200)
  })
})
