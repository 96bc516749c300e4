// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
// cashier, probe 3: a payout being sent while staff record it, what the customer is answered and charged,
// reconciliation of flagged deposits, staff notes kept beside staff decisions.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq, sql } from 'drizzle-orm'
import { AccountsPort } from '../../src/modules/accounts'
import { approveWithdrawal, markPaid, payoutFailed } from '../../src/modules/cashier/backoffice'
import { PAYOUT_ANSWER_MARGIN_MS, PAYOUT_SEND_LEASE_MS } from '../../src/modules/cashier/backoffice/shared'
import { cashierConfig } from '../../src/modules/cashier/config'
import type { CashierCtx } from '../../src/modules/cashier/context'
import { type PaymentProvider, PayoutRefused } from '../../src/modules/cashier/providers/port'
import { type SandboxEventType, sandboxEvent, signSandbox } from '../../src/modules/cashier/providers/sandbox'
import { cashierTransactions, sandboxPayments } from '../../src/modules/cashier/schema'
import { KycPort } from '../../src/modules/kyc'
import { makeTestApp, type TestApp } from '../support/app'
import { SANDBOX_SECRET } from '../support/cashier'

const LOGIN = 100001
let offset = 0
const clock = { now: () => Date.now() + offset }
let t: TestApp
let customer: string
let manager: string
let manager2: string

/** Moves the app's clock on; tokens are signed in again (their lifetime is on that clock). */
async function later(ms: number) {
  offset += ms
  customer = await t.customerToken()
  manager = await t.staffToken()
  manager2 = await t.staffToken()
}

beforeAll(async () => {
  t = await makeTestApp({ clock })
  customer = await t.customerToken()
  manager = await t.staffToken()
  manager2 = await t.staffToken()
  const settings = (await t.request('GET', '/manager/kyc/settings', { token: manager })).json
  const saved = await t.request('PUT', '/manager/kyc/settings', {
    token: manager,
    body: {
      steps: settings.steps,
      tiers: { ...settings.tiers, withdrawal_after: [], deposit_unlimited_after: [] },
    },
  })
  expect(saved.status).toBe(200)
  // a wire method with a fixed fee of 20 USD (fee_fixed_minor 2000), from 1 USD
  const m = await t.request('PUT', '/manager/cashier/methods/wire_fee', {
    token: manager,
    body: {
      provider: 'wire',
      title: 'Wire (fee)',
      deposit: true,
      withdrawal: true,
      currencies: ['USD'],
      min_amount: 1,
      max_amount: 100000,
      fee_fixed_minor: 2000,
      enabled: true,
    },
  })
  expect(m.status).toBe(200)
})
afterAll(() => t.close())

const balance = async () =>
  (await t.request('GET', `/account/me?login=${LOGIN}`, { token: customer })).json.balance as number
const staffTx = async (id: number) =>
  (await t.request('GET', `/manager/cashier/transactions/${id}`, { token: manager })).json

/** A signed sandbox webhook on the app's clock (its signature's tolerance is 300 s). */
function hook(eventId: string, type: SandboxEventType, id: number, token: string, minor: number) {
  const body = sandboxEvent(eventId, type, { token, reference: String(id), amount: minor, currency: 'USD' })
  return t.request('POST', '/cashier/webhook/sandbox', {
    body,
    headers: {
      'content-type': 'application/json',
      'sandbox-signature': signSandbox(SANDBOX_SECRET, body, Math.floor(clock.now() / 1000)),
    },
  })
}

async function withdrawal(amount: number) {
  const w = await t.request('POST', '/cashier/withdrawal', {
    token: customer,
    body: { login: LOGIN, method: 'wire', amount },
  })
  expect([w.status, w.json.error]).toEqual([200, undefined])
  return w.json.transaction.id as number
}

describe('a payout being sent is not recorded paid or failed meanwhile', () => {
  /** The cashier's services with a wire provider of our own (the app's own answers at once). */
  function cashierWith(startPayout: PaymentProvider['startPayout']): CashierCtx {
    const wire: PaymentProvider = {
      id: 'wire',
      webhooks: false,
      startDeposit: () => Promise.reject(new Error('not here')),
      verifyWebhook: () => false,
      parseWebhook: () => ({ error: 'none' }),
      startPayout,
    }
    return {
      ...t.ctx,
      accounts: t.ports.get(AccountsPort),
      kyc: t.ports.get(KycPort),
      providers: new Map([['wire', wire]]),
      settings: cashierConfig(t.ctx.config),
    }
  }

  /** A payout call that waits for `answer`; `asked` resolves once the approval has committed and called. */
  function slowProvider(answer: (id: number) => { providerRef: string }) {
    let asked!: () => void
    let release!: () => void
    const askedP = new Promise<void>((r) => {
      asked = r
    })
    const gate = new Promise<void>((r) => {
      release = r
    })
    const sent: number[] = []
    const ctx = cashierWith(async (p) => {
      asked()
      await gate
      const r = answer(p.transactionId)
      sent.push(p.transactionId)
      return r
    })
    return { ctx, sent, asked: askedP, release }
  }

  test('a payout being sent cannot also be recorded failed: the customer never gets both the payout and the hold back', async () => {
    const start = await balance()
    const id = await withdrawal(60)
    expect(await balance()).toBe(start - 60)
    const p = slowProvider((id) => ({ providerRef: `W-PO${id}` }))
    const approving = approveWithdrawal({ ctx: p.ctx, brandId: 1, staffId: 1, id, input: {} })
    await p.asked
    // a second staff member sees payout_in_progress and records it failed (the hold would return)
    expect((await staffTx(id)).status_name).toBe('payout_in_progress')
    const failed = await t.request('POST', `/manager/cashier/transactions/${id}/payout-failed`, {
      token: manager2,
      body: { reason: 'the bank returned the transfer' },
    })
    expect([failed.status, failed.json.error]).toEqual([409, 'PAYOUT_BEING_SENT'])
    // the provider accepts the payout: the money left
    p.release()
    const approved = await approving
    expect([approved.status_name, approved.provider_ref]).toEqual(['payout_in_progress', `W-PO${id}`])
    // the payout left (the provider accepted it): the hold must not have come back as well
    expect(p.sent).toEqual([id])
    expect(await balance()).toBe(start - 60)
    // once the provider answered, staff record what the bank says later (its return of the wire)
    const returned = await t.request('POST', `/manager/cashier/transactions/${id}/payout-failed`, {
      token: manager2,
      body: { reason: 'the bank returned the transfer' },
    })
    expect([returned.status, returned.json.status_name]).toEqual([200, 'payout_failed'])
    expect(await balance()).toBe(start)
  })

  test('a payout being sent cannot be marked paid: the provider then refuses it, and it fails with its hold back', async () => {
    const start = await balance()
    const id = await withdrawal(61)
    const p = slowProvider(() => {
      throw new PayoutRefused('beneficiary account closed')
    })
    const approving = approveWithdrawal({ ctx: p.ctx, brandId: 1, staffId: 1, id, input: {} })
    await p.asked
    const paid = await t.request('POST', `/manager/cashier/transactions/${id}/mark-paid`, {
      token: manager2,
      body: { note: 'looks sent' },
    })
    expect([paid.status, paid.json.error]).toEqual([409, 'PAYOUT_BEING_SENT'])
    p.release()
    expect((await approving).status_name).toBe('payout_failed')
    expect((await staffTx(id)).status_name).toBe('payout_failed')
    expect(await balance()).toBe(start)
  })

  test('a send lease that lapses with no answer (the sender gone): reconciliation holds it in manual_review; a late answer is noted, nothing moves', async () => {
    const start = await balance()
    const id = await withdrawal(62)
    const p = slowProvider((id) => ({ providerRef: `W-PO${id}` }))
    const approving = approveWithdrawal({ ctx: p.ctx, brandId: 1, staffId: 1, id, input: {} })
    await p.asked
    // within the lease the job leaves it alone
    await t.runJob('cashier.reconcile')
    expect((await staffTx(id)).status_name).toBe('payout_in_progress')
    await later(PAYOUT_SEND_LEASE_MS + 60_000)
    await t.runJob('cashier.reconcile')
    const held = await staffTx(id)
    expect([held.status_name, held.flagged]).toEqual(['manual_review', true])
    expect(held.staff_note).toContain('send lease lapsed')
    expect(await balance()).toBe(start - 62)
    // the provider answers at last: added to the note for staff, the status stays theirs to decide
    p.release()
    const answered = await approving
    expect([answered.status_name, answered.provider_ref]).toEqual(['manual_review', null])
    expect(answered.staff_note).toContain(`accepted the payout (W-PO${id})`)
    expect(answered.staff_note).toContain('send lease lapsed')
    expect(await balance()).toBe(start - 62)
    const paid = await t.request('POST', `/manager/cashier/transactions/${id}/mark-paid`, {
      token: manager,
      body: {},
    })
    expect([paid.status, paid.json.status_name]).toEqual([200, 'paid'])
    expect(await balance()).toBe(start - 62)
  })

  test('past its lease, staff may record a payout paid or failed before the job ran', async () => {
    const start = await balance()
    const id = await withdrawal(63)
    const p = slowProvider(() => {
      throw new PayoutRefused('refused late')
    })
    const approving = approveWithdrawal({ ctx: p.ctx, brandId: 1, staffId: 1, id, input: {} })
    await p.asked
    await later(PAYOUT_SEND_LEASE_MS + 60_000)
    const failed = await t.request('POST', `/manager/cashier/transactions/${id}/payout-failed`, {
      token: manager2,
      body: { reason: 'the bank never received it' },
    })
    expect([failed.status, failed.json.status_name]).toEqual([200, 'payout_failed'])
    expect(await balance()).toBe(start)
    // the refusal that comes after is noted; the hold is not returned twice
    p.release()
    const answered = await approving
    expect(answered.status_name).toBe('payout_failed')
    expect(answered.staff_note).toContain(
      'refused the payout (refused late) after the withdrawal was recorded or moved meanwhile',
    )
    expect(await balance()).toBe(start)
  })

  /**
   * Staff (another instance) act on the row they read past the lease; their write transaction starts
   * only once the sender's answer committed (the provider is released and answers first).
   */
  function answeredFirst(base: CashierCtx, release: () => void, approving: Promise<unknown>): CashierCtx {
    const realUow = t.ctx.uow
    return {
      ...base,
      uow: {
        run: async (fn: never, order?: never) => {
          release()
          await approving
          return realUow.run(fn, order)
        },
      } as never,
    }
  }

  // review of f58cf6c (.tmp/review-cashier3/lapsed-race.test.ts)
  test('payout-failed past the lease racing the late success answer: the hold returns AND the payout left, unflagged', async () => {
    const start = await balance()
    const id = await withdrawal(64)
    const p = slowProvider((id) => ({ providerRef: `W-PO${id}` }))
    const approving = approveWithdrawal({ ctx: p.ctx, brandId: 1, staffId: 1, id, input: {} })
    await p.asked
    // the provider is slow: the lease lapses (the job has not run yet)
    await later(PAYOUT_SEND_LEASE_MS + 1000)
    // staff (instance B) record the payout failed: `act` reads the row (lease lapsed: allowed), and the
    // provider's success answer (instance A) commits before B's write transaction starts
    let outcome: string
    try {
      const v = await payoutFailed({
        ctx: answeredFirst(p.ctx, p.release, approving),
        brandId: 1,
        staffId: 2,
        id,
        input: { reason: 'the bank never received it' },
      })
      outcome = `${v.status_name} flagged=${v.flagged} ref=${v.provider_ref}`
    } catch (e) {
      outcome = `refused ${(e as { code?: string }).code ?? String(e)}`
    }
    const after = await approving
    const end = await balance()
    // Either staff's write is refused (the lease it checked is no longer the row's), or the provider's
    // accepted payout is flagged; never the hold back for a payout the provider sent.
    expect({ outcome, balanceBack: end === start }).not.toEqual({
      outcome: `payout_failed flagged=false ref=W-PO${id}`,
      balanceBack: true,
    })
    expect(outcome).toBe('refused TRANSACTION_STATE_CONFLICT')
    expect([after.status_name, after.provider_ref]).toEqual(['payout_in_progress', `W-PO${id}`])
    expect(end).toBe(start - 64)
    const again = await t.request('POST', `/manager/cashier/transactions/${id}/payout-failed`, {
      token: manager2,
      body: { reason: 'the bank returned the transfer' },
    })
    // read now (the answer written), the bank's return of the wire is recorded as before
    expect([again.status, again.json.status_name]).toEqual([200, 'payout_failed'])
    expect(await balance()).toBe(start)
  })

  test("mark-paid past the lease racing the sender's answer: refused with its current state, nothing recorded on the stale read", async () => {
    const start = await balance()
    const id = await withdrawal(65)
    const p = slowProvider((id) => ({ providerRef: `W-PO${id}` }))
    const approving = approveWithdrawal({ ctx: p.ctx, brandId: 1, staffId: 1, id, input: {} })
    await p.asked
    await later(PAYOUT_SEND_LEASE_MS + 1000)
    const refused = await markPaid({
      ctx: answeredFirst(p.ctx, p.release, approving),
      brandId: 1,
      staffId: 2,
      id,
      input: { note: 'looks sent' },
    }).then(
      () => 'recorded',
      (e: { code?: string; message?: string }) => `${e.code}: ${e.message}`,
    )
    expect(refused).toStartWith(`TRANSACTION_STATE_CONFLICT: withdrawal ${id} changed while this was asked`)
    expect(refused).toContain(`accepted its payout: W-PO${id}`)
    expect(refused).toContain('payout_in_progress now')
    expect((await staffTx(id)).status_name).toBe('payout_in_progress')
    const paid = await t.request('POST', `/manager/cashier/transactions/${id}/mark-paid`, {
      token: manager2,
      body: {},
    })
    expect([paid.status, paid.json.status_name]).toEqual([200, 'paid'])
    expect(await balance()).toBe(start - 65)
  })

  test('a payout call past its deadline (the lease less 30 s) is aborted and held in manual_review under the lease: none is in flight once it lapsed', async () => {
    const start = await balance()
    const id = await withdrawal(66)
    let signal: AbortSignal | undefined
    const ctx = cashierWith(async (p, s) => {
      signal = s
      // a provider that honours the signal; without one it answers (accepted) after 3 s
      await new Promise<void>((r) => {
        s?.addEventListener('abort', () => r())
        setTimeout(r, 3000)
      })
      if (s?.aborted) throw s.reason
      return { providerRef: `W-PO${p.transactionId}` }
    })
    ctx.settings = { ...ctx.settings, payoutSendLeaseMs: PAYOUT_ANSWER_MARGIN_MS + 300 }
    const held = await approveWithdrawal({ ctx, brandId: 1, staffId: 1, id, input: {} })
    expect([held.status_name, held.flagged, held.provider_ref]).toEqual(['manual_review', true, null])
    expect(held.staff_note).toContain('wire did not answer within')
    expect(signal?.aborted).toBe(true)
    // written under its lease, which ends with it: staff record it at once, the job has nothing to do
    const [row] = await t.ctx.db
      .select({ until: cashierTransactions.payoutSendingUntil })
      .from(cashierTransactions)
      .where(eq(cashierTransactions.id, id))
    expect(row!.until).toBe(0)
    expect(await balance()).toBe(start - 66)
    const failed = await t.request('POST', `/manager/cashier/transactions/${id}/payout-failed`, {
      token: manager2,
      body: { reason: 'the provider has no record of it' },
    })
    expect([failed.status, failed.json.status_name]).toEqual([200, 'payout_failed'])
    expect(await balance()).toBe(start)
  })

  test('a provider that ignores the abort and accepts after the deadline: its reference is written to the staff note, flagged', async () => {
    const id = await withdrawal(67)
    let answer = () => {}
    const late = new Promise<void>((r) => {
      answer = r
    })
    const ctx = cashierWith(async (p) => {
      // a module that does not honour the signal: it answers (accepted) whenever it answers
      await late
      return { providerRef: `W-LATE${p.transactionId}` }
    })
    ctx.settings = { ...ctx.settings, payoutSendLeaseMs: PAYOUT_ANSWER_MARGIN_MS + 300 }
    const held = await approveWithdrawal({ ctx, brandId: 1, staffId: 1, id, input: {} })
    expect(held.status_name).toBe('manual_review')
    answer()
    // the late answer's note lands after the approval's answer
    for (let i = 0; i < 50 && !(await staffTx(id)).staff_note.includes(`W-LATE${id}`); i++)
      await Bun.sleep(20)
    const after = await staffTx(id)
    expect(after.staff_note).toContain(`accepted the payout (W-LATE${id}) after its deadline`)
    expect([after.status_name, after.flagged]).toEqual(['manual_review', true])
  })
})

describe('what the customer is answered and charged', () => {
  test('a deposit retried with its idempotency key (its first answer lost) answers the same next step: the payment page', async () => {
    const body = { login: LOGIN, method: 'card', amount: 50, idempotency_key: 'probe3-retry-0001' }
    const first = await t.request('POST', '/cashier/deposit', { token: customer, body })
    expect(first.status).toBe(200)
    expect(first.json.next.type).toBe('redirect')
    const again = await t.request('POST', '/cashier/deposit', { token: customer, body })
    expect([again.status, again.json.idempotent, again.json.transaction.id]).toEqual([
      200,
      true,
      first.json.transaction.id,
    ])
    // the client that lost the first answer has no other way to reach the payment page
    expect(again.json.next).toEqual(first.json.next)
  })

  test('a wire deposit retried with its key answers its bank details and reference again; once cancelled, none', async () => {
    const body = { login: LOGIN, method: 'wire', amount: 70, idempotency_key: 'probe3-retry-wire-1' }
    const first = await t.request('POST', '/cashier/deposit', { token: customer, body })
    expect([first.status, first.json.next.type]).toEqual([200, 'instructions'])
    const again = await t.request('POST', '/cashier/deposit', { token: customer, body })
    expect(again.json.next).toEqual(first.json.next)
    const id = first.json.transaction.id as number
    expect((await t.request('POST', `/cashier/transactions/${id}/cancel`, { token: customer })).status).toBe(
      200,
    )
    const ended = await t.request('POST', '/cashier/deposit', { token: customer, body })
    expect([ended.status, ended.json.transaction.status_name, ended.json.next]).toEqual([
      200,
      'cancelled',
      null,
    ])
  })

  test('a withdrawal the fee takes whole is refused: the customer is not debited for a payout of nothing', async () => {
    const start = await balance()
    const w = await t.request('POST', '/cashier/withdrawal', {
      token: customer,
      body: { login: LOGIN, method: 'wire_fee', amount: 10 },
    })
    expect(w.status).toBe(400)
    expect(w.json.error).toBe('AMOUNT_OUT_OF_RANGE')
    // names the field and the smallest amount the fee leaves something of
    expect(w.json.message).toContain('amount:')
    expect(w.json.message).toContain('20.01 USD')
    expect(await balance()).toBe(start)
    // that smallest amount is taken (1 cent pays out)
    const ok = await t.request('POST', '/cashier/withdrawal', {
      token: customer,
      body: { login: LOGIN, method: 'wire_fee', amount: 20.01 },
    })
    expect([ok.status, ok.json.transaction?.net_amount]).toEqual([200, 0.01])
  })

  test('a deposit the fee takes whole is refused: nothing would be credited for the money paid', async () => {
    const d = await t.request('POST', '/cashier/deposit', {
      token: customer,
      body: { login: LOGIN, method: 'wire_fee', amount: 15 },
    })
    expect(d.status).toBe(400)
    expect([d.json.error, d.json.message.includes('20.01 USD')]).toEqual(['AMOUNT_OUT_OF_RANGE', true])
    const exact = await t.request('POST', '/cashier/deposit', {
      token: customer,
      body: { login: LOGIN, method: 'wire_fee', amount: 20 },
    })
    expect([exact.status, exact.json.error]).toEqual([400, 'AMOUNT_OUT_OF_RANGE'])
  })

  test('(sound) an idempotency key of a withdrawal reused for a deposit: 409 IDEMPOTENCY_KEY_REUSED', async () => {
    const w = await t.request('POST', '/cashier/withdrawal', {
      token: customer,
      body: { login: LOGIN, method: 'wire', amount: 60, idempotency_key: 'probe3-key-0002' },
    })
    expect(w.status).toBe(200)
    const d = await t.request('POST', '/cashier/deposit', {
      token: customer,
      body: { login: LOGIN, method: 'card', amount: 60, idempotency_key: 'probe3-key-0002' },
    })
    expect([d.status, d.json.error]).toEqual([409, 'IDEMPOTENCY_KEY_REUSED'])
    const w2 = await t.request('POST', '/cashier/withdrawal', {
      token: customer,
      body: { login: LOGIN, method: 'wire', amount: 61, idempotency_key: 'probe3-key-0002' },
    })
    expect([w2.status, w2.json.error]).toEqual([409, 'IDEMPOTENCY_KEY_REUSED'])
  })
})

describe('reconciliation of flagged credited deposits', () => {
  /** A card deposit paid on the sandbox page and credited by its webhook; its sandbox token. */
  async function creditedDeposit(amount: number) {
    const d = await t.request('POST', '/cashier/deposit', {
      token: customer,
      body: { login: LOGIN, method: 'card', amount },
    })
    expect(d.status).toBe(200)
    const id = d.json.transaction.id as number
    const token = (d.json.next.url as string).split('/').pop()!
    // the customer pays on the provider's page (its own delivery cannot reach this in-process app)
    expect(
      (await t.request('POST', `/cashier/sandbox/pay/${token}`, { body: { action: 'pay' } })).status,
    ).toBe(200)
    expect((await hook(`evt-ok-${id}`, 'payment.succeeded', id, token, amount * 100)).status).toBe(200)
    return { id, token }
  }

  /** The provider refunds the payment on its side; its webhook is lost. */
  const providerRefunds = (token: string) =>
    t.ctx.db.update(sandboxPayments).set({ status: 'refunded' }).where(eq(sandboxPayments.token, token))

  test('(control) a credited deposit the provider refunded, its webhook lost: reconciliation takes it back', async () => {
    const { id, token } = await creditedDeposit(40)
    const before = await balance()
    await providerRefunds(token)
    await later(10 * 60_000)
    await t.runJob('cashier.reconcile')
    await t.runJob('cashier.inbox')
    expect((await staffTx(id)).status_name).toBe('refunded')
    expect(await balance()).toBe(before - 40)
  })

  test('a credited deposit flagged once (the provider reported it failed) is still reconciled: its later refund is taken back', async () => {
    const { id, token } = await creditedDeposit(30)
    // a contradiction staff are told about (README: flagged, nothing moves); the money did arrive
    expect((await hook(`evt-fail-${id}`, 'payment.failed', id, token, 3000)).status).toBe(200)
    expect((await staffTx(id)).flagged).toBe(true)
    const before = await balance()
    // weeks later the provider refunds it; the webhook is lost
    await providerRefunds(token)
    await later(10 * 60_000)
    await t.runJob('cashier.reconcile')
    await t.runJob('cashier.inbox')
    const s = await staffTx(id)
    expect(s.status_name).toBe('refunded')
    expect(await balance()).toBe(before - 30)
  })

  test('a flagged contradiction visited again is not flagged again (its note is added once)', async () => {
    const { id, token } = await creditedDeposit(35)
    // the provider says failed of a deposit we credited: reconciliation flags it
    await t.ctx.db.update(sandboxPayments).set({ status: 'declined' }).where(eq(sandboxPayments.token, token))
    await later(10 * 60_000)
    await t.runJob('cashier.reconcile')
    await t.runJob('cashier.reconcile')
    const s = await staffTx(id)
    expect([s.status_name, s.flagged]).toEqual(['credited', true])
    expect(s.staff_note.split('reconciliation: provider says failed').length - 1).toBe(1)
  })
})

describe('staff decisions keep the notes before them', () => {
  test("resolving a reviewed deposit keeps the provider's earlier notes in staff_note", async () => {
    const d = await t.request('POST', '/cashier/deposit', {
      token: customer,
      body: { login: LOGIN, method: 'card', amount: 50 },
    })
    const id = d.json.transaction.id as number
    const token = `tok${id}`
    // the provider confirms 40 of the 50 asked (review), then a chargeback of 15 is recorded in review
    expect((await hook(`evt-n1-${id}`, 'payment.succeeded', id, token, 4000)).status).toBe(200)
    expect((await hook(`evt-n2-${id}`, 'payment.disputed', id, token, 1500)).status).toBe(200)
    const before = await staffTx(id)
    expect(before.status_name).toBe('manual_review')
    expect(before.staff_note).toContain('chargeback of 15')
    const r = await t.request('POST', `/manager/cashier/transactions/${id}/resolve`, {
      token: manager,
      body: { decision: 'credit', note: 'ok per provider' },
    })
    expect(r.status).toBe(200)
    // the chargeback taken before the credit stays in view beside the decision
    expect(r.json.staff_note).toContain('chargeback of 15')
    expect(r.json.staff_note).toContain('ok per provider')
  })

  test('closing a reviewed deposit as failed keeps the earlier notes too', async () => {
    const d = await t.request('POST', '/cashier/deposit', {
      token: customer,
      body: { login: LOGIN, method: 'card', amount: 45 },
    })
    const id = d.json.transaction.id as number
    expect((await hook(`evt-f1-${id}`, 'payment.succeeded', id, `tok${id}`, 4000)).status).toBe(200)
    expect((await hook(`evt-f2-${id}`, 'payment.disputed', id, `tok${id}`, 500)).status).toBe(200)
    const before = await staffTx(id)
    expect(before.status_name).toBe('manual_review')
    expect(before.staff_note).toContain('chargeback of 5')
    const r = await t.request('POST', `/manager/cashier/transactions/${id}/resolve`, {
      token: manager,
      body: { decision: 'fail', note: 'provider says the card was stolen' },
    })
    expect(r.status).toBe(200)
    expect(r.json.staff_note.startsWith(before.staff_note)).toBe(true)
    expect(r.json.staff_note).toContain('provider says the card was stolen')
  })

  test("approving a withdrawal adds the approval's note to the staff note it has", async () => {
    const id = await withdrawal(55)
    await t.ctx.db.run(
      sql`update cashier_transactions set staff_note = 'called the customer' where id = ${id}`,
    )
    const r = await t.request('POST', `/manager/cashier/transactions/${id}/approve`, {
      token: manager,
      body: { note: 'checked' },
    })
    expect(r.status).toBe(200)
    expect(r.json.staff_note).toBe('called the customer\nchecked')
  })
})
