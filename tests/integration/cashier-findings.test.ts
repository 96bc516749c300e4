// What a hostile probe of the cashier and KYC found (issue 43's twenty-second session): payment pages and
// signed webhooks addressed where the request's Host said, a review crediting whatever a provider's figure
// said, 500s for a lost race and a figure past exact integers, a note in minor units, a step approved
// over rejected documents, a limit with a floating-point tail, withdrawal status names the filter refused.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { ManualClock } from '../../src/kernel/clock'
import { type CashierConfig, publicOrigin } from '../../src/modules/cashier/config'
import { sandboxPayments } from '../../src/modules/cashier/schema'
import { makeTestApp, type TestApp } from '../support/app'
import { sandboxWebhook } from '../support/cashier'
import * as F from '../support/files'

let t: TestApp
let customer: string
let manager: string

beforeAll(async () => {
  t = await makeTestApp({
    env: { CASHIER_PUBLIC_URLS: JSON.stringify({ Demo: 'https://pay.demo.example' }) },
  })
  customer = await t.customerToken()
  manager = await t.staffToken()
})
afterAll(() => t.close())

const deposit = (body: Record<string, unknown>, host = 'localhost') =>
  t.request('POST', '/cashier/deposit', {
    token: customer,
    body: { login: 100001, method: 'card', ...body },
    host,
  })
const confirm = (id: string, tx: number, amount: number) =>
  sandboxWebhook(t, id, 'payment.succeeded', { id: tx, amount })
const staffTx = async (id: number) =>
  (await t.request('GET', `/manager/cashier/transactions/${id}`, { token: manager })).json
const balance = async () =>
  (await t.request('GET', '/account/me?login=100001', { token: customer })).json.balance as number
const resolve = (id: number, decision: 'credit' | 'fail') =>
  t.request('POST', `/manager/cashier/transactions/${id}/resolve`, {
    token: manager,
    body: { decision, note: 'checked', ...(decision === 'fail' ? { reason: 'no' } : {}) },
  })

describe('where payments and webhooks are addressed', () => {
  test("the brand's configured origin, whatever port or scheme the request's Host names", async () => {
    const d = await deposit({ amount: 10 }, 'localhost:39399')
    expect(d.status).toBe(200)
    expect(d.json.next.url).toStartWith('https://pay.demo.example/cashier/sandbox/pay/')
  })

  test('without one: HTTPS on the allowlisted host in production, the request origin in development', () => {
    const settings = (production: boolean): CashierConfig => ({
      secrets: {},
      wireBank: { name: 'b', iban: 'GB00', bic: 'BUKBGB22', holder: 'h' },
      publicUrls: { Demo: 'https://pay.demo.example/' },
      production,
    })
    expect(publicOrigin(settings(true), 'Beta', 'http://beta.example:39399/cashier/deposit')).toBe(
      'https://beta.example',
    )
    expect(publicOrigin(settings(false), 'Beta', 'http://localhost:3000/cashier/deposit')).toBe(
      'http://localhost:3000',
    )
    expect(publicOrigin(settings(true), 'Demo', 'http://localhost:1/x')).toBe('https://pay.demo.example')
  })
})

describe('manual review', () => {
  test("a provider's figure past what the method takes is not credited by a review; past exact integers it is refused", async () => {
    const d = await deposit({ amount: 10 })
    const id = d.json.transaction.id as number
    // a figure no payment has: 400 at the webhook, nothing recorded
    const huge = await confirm(`evt-huge-${id}`, id, 9_007_199_254_740_991)
    expect([huge.status, huge.json.error]).toEqual([400, 'INVALID_DATA'])
    expect((await staffTx(id)).status_name).toBe('pending_payment')
    // a billion: recorded for review, but a review cannot credit it (card takes 10,000 at most)
    expect((await confirm(`evt-big-${id}`, id, 100_000_000_000)).status).toBe(200)
    expect((await staffTx(id)).status_name).toBe('manual_review')
    const before = await balance()
    const r = await resolve(id, 'credit')
    expect([r.status, r.json.error]).toEqual([409, 'TRANSACTION_STATE_CONFLICT'])
    expect(r.json.message).toContain('more than card takes')
    expect(await balance()).toBe(before)
    expect((await resolve(id, 'fail')).status).toBe(200)
  })

  test('staff resolving one deposit at once: one credit, the others 409, never a 500; its note in major units', async () => {
    const d = await deposit({ amount: 100 })
    const id = d.json.transaction.id as number
    expect((await confirm(`evt-90-${id}`, id, 9000)).status).toBe(200)
    const history = (await t.request('GET', `/cashier/transactions/${id}`, { token: customer })).json.history
    expect(JSON.stringify(history)).toContain('provider confirmed 90 USD, expected 100 USD')
    const before = await balance()
    const answers = await Promise.all([
      resolve(id, 'credit'),
      resolve(id, 'credit'),
      resolve(id, 'credit'),
      resolve(id, 'credit'),
      resolve(id, 'fail'),
    ])
    const codes = answers.map((a) => a.status)
    expect(codes.filter((c) => c === 200)).toHaveLength(1)
    expect(codes.filter((c) => c !== 200 && c !== 409)).toEqual([])
    const credited = answers.some((a) => a.status === 200 && a.json.status_name === 'credited')
    expect(await balance()).toBe(credited ? before + 90 : before)
  })
})

describe('customer views', () => {
  test('the deposit limit left before KYC has no floating-point tail; withdrawal status names filter', async () => {
    // 2,000 before KYC less what is asked: 2000 - 408.34 - … is 591.6600000000001 in floating point
    expect((await deposit({ amount: 408.34 })).status).toBe(200)
    const left = (await t.request('GET', '/cashier/methods?login=100001', { token: customer })).json
      .deposit_limit_remaining as number
    expect(left).toBeGreaterThan(0)
    expect(Math.round(left * 100) / 100).toBe(left)
    // pending_approval is status 1 of a withdrawal: the deposits pending payment (status 1 too) are not it
    expect(
      (await t.request('GET', '/cashier/transactions?status=pending_payment', { token: customer })).json.rows
        .length,
    ).toBeGreaterThan(0)
    for (const status of ['pending_approval', 'paid', 'payout_failed', 'credited']) {
      const r = await t.request('GET', `/cashier/transactions?status=${status}`, { token: customer })
      expect(r.status).toBe(200)
      for (const row of r.json.rows as { status_name: string }[]) expect(row.status_name).toBe(status)
    }
  })
})

describe('KYC', () => {
  test('a step whose documents were all rejected cannot be approved', async () => {
    const f = new FormData()
    f.append('file', new File([F.PNG], 'passport.png', { type: 'image/png' }))
    f.append('purpose', 'kyc_document')
    const file = (await t.request('POST', '/upload', { token: customer, form: f })).json.file_id as string
    const doc = await t.request('POST', '/customer/kyc/documents', {
      token: customer,
      body: { file_id: file, step: 'identity', document_type: 'passport', valid_until: '2031-01-01' },
    })
    expect(doc.status).toBe(200)
    const submit = await t.request('POST', '/customer/kyc/steps/identity/submit', {
      token: customer,
      body: {},
    })
    expect(submit.json.status).toBe('submitted')
    const me = (await t.request('GET', '/customer/kyc', { token: customer })).json.customer_id as number
    const docId = doc.json.document.id as number
    const rejected = await t.request('POST', `/manager/kyc/documents/${docId}/decision`, {
      token: manager,
      body: { decision: 'reject', reason: 'expired' },
    })
    expect(rejected.status).toBe(200)
    const approve = await t.request('POST', `/manager/kyc/profiles/${me}/steps/identity/decision`, {
      token: manager,
      body: { decision: 'approve' },
    })
    expect([approve.status, approve.json.error]).toEqual([400, 'KYC_DOCUMENTS_MISSING'])
    const view = (await t.request('GET', '/customer/kyc', { token: customer })).json
    expect(view.steps.find((s: { id: string }) => s.id === 'identity').status).not.toBe('approved')
  })
})

describe('the sandbox provider', () => {
  /** An app whose payments' webhooks go to a port nothing listens on: none is acknowledged. */
  const unheard = (clock?: ManualClock) =>
    makeTestApp({
      ...(clock ? { clock } : {}),
      env: { CASHIER_PUBLIC_URLS: JSON.stringify({ Demo: 'http://127.0.0.1:9' }) },
    })
  /** A card deposit of 10 by the demo customer: the token of its sandbox payment. */
  async function payment(app: TestApp, customer?: string) {
    const d = await app.request('POST', '/cashier/deposit', {
      token: customer ?? (await app.customerToken()),
      body: { login: 100001, method: 'card', amount: 10 },
    })
    expect(d.status).toBe(200)
    return String(d.json.next.url).split('/').at(-1)!
  }
  /** The payment's row and the ids of the webhooks it owes. */
  async function owedOf(app: TestApp, token: string) {
    const [row] = await app.ctx.db.select().from(sandboxPayments).where(eq(sandboxPayments.token, token))
    return { row: row!, ids: (JSON.parse(row!.outbox) as { id: string }[]).map((o) => o.id) }
  }

  test('retries each webhook for 3 days from when it became owed, not from when the payment was created', async () => {
    const clock = new ManualClock(Date.UTC(2026, 10, 2, 9, 0, 0))
    const app = await unheard(clock)
    try {
      const token = await payment(app)
      const owed = async () => (await owedOf(app, token)).ids
      const day = 86_400_000
      // the customer pays on the page two and a half days after the payment was made
      clock.advance(2.5 * day)
      expect(
        (await app.request('POST', `/cashier/sandbox/pay/${token}`, { body: { action: 'pay' } })).status,
      ).toBe(200)
      expect(await owed()).toEqual([`${token}-captured`])
      // a day later the webhook is still retried (3.5 days after the payment, 1 after the webhook)
      clock.advance(day)
      await app.runJob('cashier.sandbox-deliver')
      expect(await owed()).toEqual([`${token}-captured`])
      // past 3 days of its own it is given up on (the reconcile job asks the provider)
      clock.advance(2.1 * day)
      await app.runJob('cashier.sandbox-deliver')
      expect(await owed()).toEqual([])
    } finally {
      await app.close()
    }
  })

  test('a pay and a decline sent at once: one is taken, the other is 409, and one webhook is owed', async () => {
    const app = await unheard()
    try {
      const customer = await app.customerToken()
      for (let i = 0; i < 5; i++) {
        const token = await payment(app, customer)
        const answers = await Promise.all(
          (['pay', 'decline'] as const).map((action) =>
            app.request('POST', `/cashier/sandbox/pay/${token}`, { body: { action } }),
          ),
        )
        expect(answers.map((a) => a.status).sort()).toEqual([200, 409])
        expect(answers.find((a) => a.status === 409)!.json.error).toBe('PAYMENT_STATE_CONFLICT')
        const { row, ids } = await owedOf(app, token)
        const taken = answers.find((a) => a.status === 200)!.json.status
        expect(row.status).toBe(taken)
        expect(ids).toEqual([`${token}-${taken}`])
      }
    } finally {
      await app.close()
    }
  })

  test('webhooks no simulator can send leave the front of the retry batch for those it can', async () => {
    const app = await unheard()
    try {
      const token = await payment(app)
      // a row whose provider is gone from the configuration: nothing can send its webhooks
      const outbox = [
        { id: 'old', update: 'confirmed', at: 0 },
        { id: 'new', update: 'confirmed', at: Date.now() },
      ]
      await app.ctx.db
        .update(sandboxPayments)
        .set({ provider: 'gone', outbox: JSON.stringify(outbox), updatedAt: 0 })
        .where(eq(sandboxPayments.token, token))
      await app.runJob('cashier.sandbox-deliver')
      const { row, ids } = await owedOf(app, token)
      // the one past its window is given up on, as one the merchant never acknowledged; the other goes to
      // the back of the queue
      expect(ids).toEqual(['new'])
      expect(row.updatedAt).toBeGreaterThan(0)
    } finally {
      await app.close()
    }
  })
})
