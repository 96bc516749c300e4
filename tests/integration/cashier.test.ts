// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { AccountsPort } from '../../src/modules/accounts'
import { customers } from '../../src/modules/accounts/schema'
import { signCheckout } from '../../src/modules/cashier/providers/checkout'
import { sandboxEvent, signSandbox } from '../../src/modules/cashier/providers/sandbox'
import { makeTestApp, type TestApp } from '../support/app'
import * as F from '../support/files'
import { PERSONAL_ANSWERS } from '../support/kyc'

const SECRET = 'sandbox-demo-secret-dev-only'
let t: TestApp
let customer: string
let manager: string

beforeAll(async () => {
  t = await makeTestApp()
  customer = await t.customerToken()
  manager = await t.staffToken()
})
afterAll(() => t.close())

const balance = async (login = 100001) =>
  (await t.request('GET', `/account/me?login=${login}`, { token: customer })).json.balance as number

const deposit = (body: Record<string, unknown>) =>
  t.request('POST', '/cashier/deposit', { token: customer, body: { login: 100001, method: 'card', ...body } })

const webhook = (body: string, headers: Record<string, string>, provider = 'sandbox', host = 'localhost') =>
  t.request('POST', `/cashier/webhook/${provider}`, {
    body,
    headers: { 'content-type': 'application/json', ...headers },
    host,
  })

const signed = (
  id: string,
  type: Parameters<typeof sandboxEvent>[1],
  tx: { id: number; amount: number },
  at = Date.now(),
  secret = SECRET,
) => {
  const body = sandboxEvent(id, type, {
    token: `tok${tx.id}`,
    reference: String(tx.id),
    amount: tx.amount,
    currency: 'USD',
  })
  return { body, headers: { 'sandbox-signature': signSandbox(secret, body, Math.floor(at / 1000)) } }
}

describe('cashier methods and deposits (4.11)', () => {
  test('methods for a REAL account; a DEMO account and another customer are refused', async () => {
    const r = await t.request('GET', '/cashier/methods?login=100001', { token: customer })
    expect(r.status).toBe(200)
    expect(r.json.methods.map((m: { code: string }) => m.code).sort()).toEqual([
      'card',
      'card_checkout',
      'wire',
    ])
    expect(r.json.deposit_limit_remaining).toBe(2000)
    expect(r.json.withdrawal_allowed).toBe(false)
    expect((await t.request('GET', '/cashier/methods?login=100002', { token: customer })).json.error).toBe(
      'ACCOUNT_NOT_REAL',
    )
    expect((await t.request('GET', '/cashier/methods?login=200001', { token: customer })).status).toBe(404)
  })

  test('a signed webhook credits once; repeats, forgeries and late events change nothing', async () => {
    const before = await balance()
    const d = await deposit({ amount: 100, idempotency_key: 'dep-test-0001' })
    expect(d.status).toBe(200)
    expect(d.json.transaction.status_name).toBe('pending_payment')
    expect(d.json.next.type).toBe('redirect')
    const again = await deposit({ amount: 100, idempotency_key: 'dep-test-0001' })
    expect(again.json.idempotent).toBe(true)
    expect(again.json.transaction.id).toBe(d.json.transaction.id)
    const tx = { id: d.json.transaction.id as number, amount: 10000 }

    // forged: no signature, wrong secret, old timestamp, changed body, another brand's secret
    const good = signed('evt-1', 'payment.succeeded', tx)
    const forged = [
      webhook(good.body, {}),
      webhook(
        good.body,
        signed('evt-1', 'payment.succeeded', tx, Date.now(), 'not-the-secret-at-all-123').headers,
      ),
      webhook(
        signed('evt-1', 'payment.succeeded', tx, Date.now() - 301_000).body,
        signed('evt-1', 'payment.succeeded', tx, Date.now() - 301_000).headers,
      ),
      webhook(good.body.replace('10000', '90000'), good.headers),
      webhook(
        good.body,
        signed('evt-1', 'payment.succeeded', tx, Date.now(), 'sandbox-beta-secret-dev-only').headers,
      ),
    ]
    for (const f of await Promise.all(forged)) expect(f.json.error).toBe('INVALID_SIGNATURE')
    expect(await balance()).toBe(before)

    const results = await Promise.all(Array.from({ length: 10 }, () => webhook(good.body, good.headers)))
    expect(results.every((r) => r.status === 200)).toBe(true)
    expect(results.filter((r) => r.json.duplicate === false)).toHaveLength(1)
    expect(await balance()).toBe(before + 100)
    // a late "pending" and a repeated success under a new id change nothing
    const late = signed('evt-2', 'payment.pending', tx)
    expect((await webhook(late.body, late.headers)).status).toBe(200)
    const dup = signed('evt-3', 'payment.succeeded', tx)
    await webhook(dup.body, dup.headers)
    expect(await balance()).toBe(before + 100)
    const v = await t.request('GET', `/cashier/transactions/${tx.id}`, { token: customer })
    expect(v.json.status_name).toBe('credited')
    expect(v.json.history.map((h: { to_name: string }) => h.to_name)).toEqual([
      'created',
      'pending_payment',
      'provider_confirmed',
      'credited',
    ])
    // a chargeback takes it back (the balance may go negative)
    const cb = signed('evt-4', 'payment.disputed', tx)
    await webhook(cb.body, cb.headers)
    expect(await balance()).toBe(before)
    expect(
      (await t.request('GET', `/cashier/transactions/${tx.id}`, { token: customer })).json.status_name,
    ).toBe('chargeback')
  })

  test("two brands' provider accounts may send the same event id: each credits its own deposit", async () => {
    const beta = await t.customerToken('beta@example.com', 'beta-pass-1', 'beta.localhost')
    const betaBalance = async () =>
      (await t.request('GET', '/account/me?login=200001', { token: beta, host: 'beta.localhost' })).json
        .balance as number
    const [ours, theirs] = [await balance(), await betaBalance()]
    const d = await deposit({ amount: 20 })
    const b = await t.request('POST', '/cashier/deposit', {
      token: beta,
      host: 'beta.localhost',
      body: { login: 200001, method: 'card', amount: 30 },
    })
    expect(b.status).toBe(200)
    const e = signed('evt-shared-1', 'payment.succeeded', { id: d.json.transaction.id, amount: 2000 })
    const f = signed(
      'evt-shared-1',
      'payment.succeeded',
      { id: b.json.transaction.id, amount: 3000 },
      Date.now(),
      'sandbox-beta-secret-dev-only',
    )
    expect((await webhook(e.body, e.headers)).json.duplicate).toBe(false)
    expect((await webhook(f.body, f.headers, 'sandbox', 'beta.localhost')).json.duplicate).toBe(false)
    expect((await webhook(f.body, f.headers, 'sandbox', 'beta.localhost')).json.duplicate).toBe(true)
    expect(await balance()).toBe(ours + 20)
    expect(await betaBalance()).toBe(theirs + 30)
  })

  test('another amount goes to manual review; staff credit what arrived', async () => {
    const d = await deposit({ amount: 50 })
    const tx = { id: d.json.transaction.id as number, amount: 4000 }
    const e = signed('evt-m1', 'payment.succeeded', tx)
    await webhook(e.body, e.headers)
    const v = await t.request('GET', `/manager/cashier/transactions/${tx.id}`, { token: manager })
    expect(v.json.status_name).toBe('manual_review')
    expect(v.json.provider_amount).toBe(40)
    const before = await balance()
    const r = await t.request('POST', `/manager/cashier/transactions/${tx.id}/resolve`, {
      token: manager,
      body: { decision: 'credit', note: 'checked with the provider' },
    })
    // 40 arrived of the 50 asked for (a hostile client's probe: the 50 were credited)
    expect([r.json.status_name, r.json.amount]).toEqual(['credited', 40])
    expect(await balance()).toBe(before + 40)
  })

  test('the checkout-shaped provider signs the whole body', async () => {
    const d = await deposit({ method: 'card_checkout', amount: 20 })
    const body = JSON.stringify({
      id: 'evt_ck1',
      type: 'payment_captured',
      data: { id: 'pay_x1', reference: String(d.json.transaction.id), amount: 2000, currency: 'USD' },
    })
    expect(
      (await webhook(body, { 'cko-signature': signCheckout('wrong-secret-xxxxxxxx', body) }, 'checkout'))
        .status,
    ).toBe(401)
    const before = await balance()
    const ok = await webhook(
      body,
      { 'cko-signature': signCheckout('checkout-demo-secret-dev-only', body) },
      'checkout',
    )
    expect(ok.json).toEqual({ received: true, duplicate: false })
    expect(await balance()).toBe(before + 20)
  })

  test('bank wire: instructions, then staff confirm the amount received', async () => {
    const d = await deposit({ method: 'wire', amount: 500 })
    expect(d.json.next.type).toBe('instructions')
    expect(d.json.next.details.reference).toBe(`W${d.json.transaction.id}`)
    const before = await balance()
    const r = await t.request('POST', `/manager/cashier/transactions/${d.json.transaction.id}/confirm-wire`, {
      token: manager,
      body: { amount: 500 },
    })
    expect(r.json.status_name).toBe('credited')
    expect(await balance()).toBe(before + 500)
  })

  test("the method's limits, then the KYC limit before approval", async () => {
    const r = await deposit({ amount: 20_000 })
    expect(r.status).toBe(400)
    expect(r.json.error).toBe('AMOUNT_OUT_OF_RANGE')
    const big = await deposit({ method: 'wire', amount: 1900 })
    expect(big.status).toBe(403)
    expect(big.json.error).toBe('KYC_LIMIT_EXCEEDED')
    expect((await deposit({ method: 'card', amount: 0.001 })).json.error).toBe('INVALID_DATA')
  })
})

describe('KYC (4.10) and withdrawals', () => {
  test('profile, answers, documents of the customer only, review, then a withdrawal is allowed', async () => {
    const p = await t.request('GET', '/customer/kyc', { token: customer })
    expect(p.json.status).toBe('not_started')
    expect(p.json.steps.map((s: { id: string }) => s.id)).toEqual([
      'personal',
      'identity',
      'address',
      'economic',
    ])

    const bad = await t.request('POST', '/customer/kyc/steps/personal/submit', {
      token: customer,
      body: { answers: { first_name: 'Ada' } },
    })
    expect(bad.json.error).toBe('INVALID_DATA')
    expect(bad.json.message).toContain('answers.last_name')
    const personal = PERSONAL_ANSWERS
    const ok = await t.request('POST', '/customer/kyc/steps/personal/submit', {
      token: customer,
      body: { answers: personal },
    })
    expect(ok.json.status).toBe('submitted')

    const upload = async (token: string, host = 'localhost') => {
      const f = new FormData()
      f.append('file', new File([F.PNG], 'passport.png', { type: 'image/png' }))
      f.append('purpose', 'kyc_document')
      return (await t.request('POST', '/upload', { token, form: f, host })).json.file_id as string
    }
    const mine = await upload(customer)
    const betaCustomer = await t.customerToken('beta@example.com', 'beta-pass-1', 'beta.localhost')
    const theirs = await upload(betaCustomer, 'beta.localhost')
    expect(theirs).toMatch(/^[0-9a-f-]{36}$/)
    const attach = (file_id: string, step: string, document_type: string, valid_until?: string) =>
      t.request('POST', '/customer/kyc/documents', {
        token: customer,
        body: { file_id, step, document_type, valid_until },
      })
    expect((await attach(theirs, 'identity', 'passport', '2031-01-01')).json.error).toBe('FILE_NOT_FOUND')
    expect((await attach(mine, 'identity', 'passport')).json.error).toBe('INVALID_DATA')
    expect((await attach(mine, 'identity', 'passport', '2031-01-01')).status).toBe(200)
    expect((await attach(mine, 'identity', 'passport', '2031-01-01')).json.error).toBe('KYC_STATE_CONFLICT')
    const addr = await upload(customer)
    expect((await attach(addr, 'address', 'utility_bill')).status).toBe(200)
    for (const step of ['identity', 'address'])
      expect(
        (await t.request('POST', `/customer/kyc/steps/${step}/submit`, { token: customer, body: {} })).json
          .status,
      ).toBe('submitted')

    // withdrawals need identity and address approved
    const early = await t.request('POST', '/cashier/withdrawal', {
      token: customer,
      body: { login: 100001, method: 'wire', amount: 100 },
    })
    expect(early.json.error).toBe('KYC_REQUIRED')

    const me = (await t.request('GET', '/customer/kyc', { token: customer })).json.customer_id as number
    const list = await t.request('GET', '/manager/kyc/profiles?status=in_progress', { token: manager })
    expect(list.json.rows.some((r: { customer_id: number }) => r.customer_id === me)).toBe(true)
    const decide = (step: string, decision: string, reason?: string) =>
      t.request('POST', `/manager/kyc/profiles/${me}/steps/${step}/decision`, {
        token: manager,
        body: { decision, reason, comment: 'internal note' },
      })
    expect((await decide('address', 'resubmit')).json.error).toBe('INVALID_DATA')
    expect((await decide('identity', 'approve')).status).toBe(200)
    expect((await decide('address', 'approve')).status).toBe(200)
    const view = await t.request('GET', '/customer/kyc', { token: customer })
    expect(view.json.gates.withdrawal_allowed).toBe(true)
    expect(JSON.stringify(view.json)).not.toContain('internal note')

    const before = await balance()
    const w = await t.request('POST', '/cashier/withdrawal', {
      token: customer,
      body: { login: 100001, method: 'wire', amount: 100 },
    })
    expect(w.json.transaction.status_name).toBe('pending_approval')
    expect(await balance()).toBe(before - 100)
    const tooMuch = await t.request('POST', '/cashier/withdrawal', {
      token: customer,
      body: { login: 100001, method: 'wire', amount: 99_000 },
    })
    expect(tooMuch.json.error).toBe('NOT_ENOUGH_FREE_MARGIN')
    const rej = await t.request('POST', `/manager/cashier/transactions/${w.json.transaction.id}/reject`, {
      token: manager,
      body: { reason: 'name does not match' },
    })
    expect(rej.json.status_name).toBe('cancelled')
    expect(await balance()).toBe(before)
  })

  test('every cashier route answers its documented codes', async () => {
    const staff = (path: string, body?: unknown) => t.request('POST', path, { token: manager, body })
    const tx = (id: number, action: string, body?: unknown) =>
      staff(`/manager/cashier/transactions/${id}/${action}`, body)
    // unknown or another brand's transaction: 404 for every action
    for (const [action, body] of [
      ['resolve', { decision: 'fail', note: 'x' }],
      ['retry-credit', {}],
      ['confirm-wire', { amount: 1 }],
      ['refund', { note: 'x' }],
      ['approve', {}],
      ['reject', { reason: 'x' }],
      ['mark-paid', {}],
      ['payout-failed', { reason: 'x' }],
    ] as const)
      expect((await tx(999_999, action, body)).json.error).toBe('TRANSACTION_NOT_FOUND')
    expect((await t.request('GET', '/cashier/transactions/999999', { token: customer })).status).toBe(404)
    // a pending card deposit: none of the staff actions apply to it
    const d = await deposit({ amount: 30 })
    const id = d.json.transaction.id as number
    for (const [action, body] of [
      ['resolve', { decision: 'credit', note: 'x' }],
      ['retry-credit', {}],
      ['confirm-wire', { amount: 30 }],
      ['refund', { note: 'x' }],
      ['approve', {}],
      ['reject', { reason: 'x' }],
      ['mark-paid', {}],
      ['payout-failed', { reason: 'x' }],
    ] as const) {
      const r = await tx(id, action, body)
      expect([action, r.status, r.json.error]).toEqual([action, 409, 'TRANSACTION_STATE_CONFLICT'])
    }
    // methods: unknown method, a DEMO account, a closed deposit_allowed, staff-only override
    expect((await deposit({ method: 'nothing', amount: 30 })).json.error).toBe('METHOD_NOT_AVAILABLE')
    const hide = await t.request(
      'PUT',
      `/manager/cashier/customers/${d.json.transaction.login}/methods/card`,
      {
        token: manager,
        body: { enabled: false },
      },
    )
    expect(hide.json.error).toBe('CUSTOMER_NOT_FOUND')
    const me = (await t.request('GET', '/customer/kyc', { token: customer })).json.customer_id
    const put = (enabled: boolean | null) =>
      t.request('PUT', `/manager/cashier/customers/${me}/methods/card`, { token: manager, body: { enabled } })
    expect((await put(false)).json.overrides).toEqual([{ method: 'card', enabled: false }])
    expect((await deposit({ amount: 30 })).json.error).toBe('METHOD_NOT_AVAILABLE')
    expect((await put(null)).json.overrides).toEqual([])
    // the CRM's flag, written as its writers do: the row, then the shared read model invalidated
    const setDeposits = async (on: number) => {
      await t.ctx.db.update(customers).set({ depositAllowed: on }).where(eq(customers.id, me))
      await t.ports.get(AccountsPort).read.invalidateCustomer(me)
    }
    await setDeposits(0)
    expect((await deposit({ amount: 30 })).json.error).toBe('DEPOSIT_NOT_ALLOWED')
    const methods = await t.request('GET', '/cashier/methods?login=100001', { token: customer })
    expect([methods.status, methods.json.error]).toEqual([403, 'DEPOSIT_NOT_ALLOWED'])
    await setDeposits(1)
    // webhooks: an unknown provider, the wire (no webhooks), a body that is not the provider's event
    const e = signed('evt-codes', 'payment.succeeded', { id, amount: 3000 })
    expect((await webhook(e.body, e.headers, 'nothing')).json.error).toBe('PROVIDER_NOT_FOUND')
    expect((await webhook(e.body, e.headers, 'wire')).json.error).toBe('PROVIDER_NOT_FOUND')
    const junk = '{"id":"evt-junk","type":"payment.exploded"}'
    const bad = await webhook(junk, {
      'sandbox-signature': signSandbox(SECRET, junk, Math.floor(Date.now() / 1000)),
    })
    expect([bad.status, bad.json.error, bad.json.message]).toEqual([
      400,
      'INVALID_DATA',
      expect.stringMatching(/^type:/),
    ])
    // a method saved by staff: invalid limits are refused, a valid one is listed
    const save = (body: Record<string, unknown>) =>
      t.request('PUT', '/manager/cashier/methods/card_eur', { token: manager, body })
    const method = {
      provider: 'sandbox',
      title: 'Card (EUR)',
      deposit: true,
      withdrawal: false,
      currencies: ['EUR'],
      min_amount: 10,
      max_amount: 5000,
      enabled: true,
    }
    expect((await save({ ...method, min_amount: 9000 })).json.message).toStartWith('min_amount:')
    expect((await save({ ...method, provider: 'nothing' })).json.message).toStartWith('provider:')
    expect((await save(method)).status).toBe(200)
    const eur = await t.request('GET', '/cashier/methods?login=100003', { token: customer })
    expect(eur.json.methods.map((m: { code: string }) => m.code)).toContain('card_eur')
    // the customer's history: filters and cursor paging
    const page1 = await t.request('GET', '/cashier/transactions?kind=deposit&limit=2', { token: customer })
    expect(page1.json.rows).toHaveLength(2)
    const page2 = await t.request(
      'GET',
      `/cashier/transactions?kind=deposit&limit=2&cursor=${page1.json.next_cursor}`,
      {
        token: customer,
      },
    )
    expect(page2.json.rows[0].id).toBeLessThan(page1.json.rows[1].id)
    const credited = await t.request('GET', '/cashier/transactions?status=credited', { token: customer })
    expect(credited.json.rows.every((r: { status_name: string }) => r.status_name === 'credited')).toBe(true)
    expect(
      (await t.request('GET', '/cashier/transactions?status=paid_twice', { token: customer })).json.message,
    ).toStartWith('query status:')
    const search = await t.request(
      'GET',
      `/manager/cashier/transactions?customer=${me}&status=manual_review`,
      {
        token: manager,
      },
    )
    expect(search.status).toBe(200)
    expect((await t.request('GET', '/manager/cashier/transactions', { token: customer })).status).toBe(403)
  })

  test('the ledger equals the balance after all of the above', async () => {
    const ops = await t.request('GET', '/manager/accounts/100001/operations?limit=500', { token: manager })
    expect(ops.status).toBe(200)
    const sum = (ops.json.rows as { amount: number }[]).reduce((a, r) => a + r.amount, 0)
    expect(Math.round(sum * 100) / 100).toBe(await balance())
  })
})
