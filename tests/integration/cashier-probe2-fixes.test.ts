// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
// cashier, probe 2: staff acting on stale facts, provider events after the end of a deposit, payouts
// with an unknown outcome.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { AccountsPort } from '../../src/modules/accounts'
import { approveWithdrawal } from '../../src/modules/cashier/backoffice'
import { cashierConfig } from '../../src/modules/cashier/config'
import type { CashierCtx } from '../../src/modules/cashier/context'
import { type PaymentProvider, PayoutRefused } from '../../src/modules/cashier/providers/port'
import { type SandboxEventType, sandboxEvent, signSandbox } from '../../src/modules/cashier/providers/sandbox'
import { KycPort } from '../../src/modules/kyc'
import { makeTestApp, type TestApp } from '../support/app'
import { SANDBOX_SECRET } from '../support/cashier'

const LOGIN = 100001
let t: TestApp
let customer: string
let manager: string

beforeAll(async () => {
  t = await makeTestApp()
  customer = await t.customerToken()
  manager = await t.staffToken()
  const settings = (await t.request('GET', '/manager/kyc/settings', { token: manager })).json
  const saved = await t.request('PUT', '/manager/kyc/settings', {
    token: manager,
    body: {
      steps: settings.steps,
      tiers: { ...settings.tiers, withdrawal_after: [], deposit_unlimited_after: [] },
    },
  })
  expect([saved.status, saved.text]).toEqual([200, saved.text])
})
afterAll(() => t.close())

const balance = async () =>
  (await t.request('GET', `/account/me?login=${LOGIN}`, { token: customer })).json.balance as number
const deposit = async (amount: number, method = 'card') => {
  const r = await t.request('POST', '/cashier/deposit', {
    token: customer,
    body: { login: LOGIN, method, amount },
  })
  expect(r.status).toBe(200)
  return r.json.transaction.id as number
}
const withdrawal = async (amount: number) => {
  const w = await t.request('POST', '/cashier/withdrawal', {
    token: customer,
    body: { login: LOGIN, method: 'wire', amount },
  })
  expect([w.status, w.text]).toEqual([200, w.text])
  return w.json.transaction.id as number
}
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
      'sandbox-signature': signSandbox(SANDBOX_SECRET, body, Math.floor(Date.now() / 1000)),
    },
  })
}
const staffTx = async (id: number) =>
  (await t.request('GET', `/manager/cashier/transactions/${id}`, { token: manager })).json
const credited = async (amount: number) => {
  const id = await deposit(amount)
  expect((await hook(`evt-c-${id}`, 'payment.succeeded', id, amount * 100)).status).toBe(200)
  expect((await staffTx(id)).status_name).toBe('credited')
  return id
}

describe('a review credit reads what the provider holds where it writes', () => {
  test('a staff credit of a reviewed deposit racing the refund of that money: nothing the provider took back is credited', async () => {
    const id = await deposit(50)
    // the provider captures 40, not 50: the deposit waits for staff, who may credit 40
    expect((await hook(`evt-rr-${id}-1`, 'payment.succeeded', id, 4000)).status).toBe(200)
    expect((await staffTx(id)).status_name).toBe('manual_review')
    const before = await balance()
    // the provider's refund of the 40 lands after the credit read the deposit, before its transaction
    const uow = t.ctx.uow as { run: (...a: unknown[]) => Promise<unknown> }
    const run = uow.run
    let armed = true
    uow.run = async function (this: unknown, ...args: unknown[]) {
      if (armed) {
        armed = false
        uow.run = run
        const r = await hook(`evt-rr-${id}-2`, 'payment.refunded', id, 4000)
        expect(r.status).toBe(200)
      }
      return run.apply(this, args)
    }
    const credit = await t.request('POST', `/manager/cashier/transactions/${id}/resolve`, {
      token: manager,
      body: { decision: 'credit', note: 'reviewed' },
    })
    uow.run = run
    // the provider holds nothing for it any more: 409 (close it as failed)
    const after = await balance()
    expect([credit.status, credit.json?.error, after - before]).toEqual([
      409,
      'TRANSACTION_STATE_CONFLICT',
      0,
    ])
    expect((await staffTx(id)).status_name).toBe('manual_review')
  })

  test('a late capture that lands while the credit is on its way is credited in full', async () => {
    const id = await deposit(30)
    // a refund of 10 before any capture: in review, the provider holds -10 until its capture comes
    expect((await hook(`evt-lc-${id}-1`, 'payment.refunded', id, 1000)).status).toBe(200)
    expect((await staffTx(id)).status_name).toBe('manual_review')
    const before = await balance()
    const uow = t.ctx.uow as { run: (...a: unknown[]) => Promise<unknown> }
    const run = uow.run
    let armed = true
    uow.run = async function (this: unknown, ...args: unknown[]) {
      if (armed) {
        armed = false
        uow.run = run
        expect((await hook(`evt-lc-${id}-2`, 'payment.succeeded', id, 3000)).status).toBe(200)
      }
      return run.apply(this, args)
    }
    const credit = await t.request('POST', `/manager/cashier/transactions/${id}/resolve`, {
      token: manager,
      body: { decision: 'credit', note: 'reviewed' },
    })
    uow.run = run
    // captured 30, refunded 10: 20 held, 20 credited (not the -10 the request read first: a 409)
    expect([credit.status, credit.json?.status_name, (await balance()) - before]).toEqual([
      200,
      'credited',
      20,
    ])
  })
})

describe('events after the end of a deposit', () => {
  test('a chargeback of a deposit the provider already refunded: the money leaves twice, so staff are told', async () => {
    const id = await credited(30)
    expect((await hook(`evt-r-${id}`, 'payment.refunded', id, 3000)).status).toBe(200)
    const before = await balance()
    expect((await hook(`evt-d-${id}`, 'payment.disputed', id, 3000)).status).toBe(200)
    // not taken from the customer twice (it is not theirs to pay twice) ...
    expect(await balance()).toBe(before)
    // ... but the provider took it a second time: recorded and flagged, not dropped as "does not apply"
    const s = await staffTx(id)
    expect([s.flagged, s.status_name]).toEqual([true, 'refunded'])
    expect(s.staff_note).toContain('provider took it again')
  })

  test('a chargeback of a deposit staff refunded: flagged for staff too', async () => {
    const id = await credited(25)
    const r = await t.request('POST', `/manager/cashier/transactions/${id}/refund`, {
      token: manager,
      body: { note: 'customer asked' },
    })
    expect(r.status).toBe(200)
    const before = await balance()
    expect((await hook(`evt-d-${id}`, 'payment.disputed', id, 2500)).status).toBe(200)
    expect(await balance()).toBe(before)
    expect((await staffTx(id)).flagged).toBe(true)
  })

  test("a 'failed' after the deposit was credited: flagged, as reconciliation flags the same fact", async () => {
    const id = await credited(20)
    const before = await balance()
    expect((await hook(`evt-f-${id}`, 'payment.failed', id, 2000)).status).toBe(200)
    expect(await balance()).toBe(before)
    const s = await staffTx(id)
    expect([s.flagged, s.status_name]).toEqual([true, 'credited'])
  })
})

describe('staff act on what is true now', () => {
  test('a withdrawal of an account staff disabled since it was asked (a dispute) is not paid out', async () => {
    const id = await withdrawal(60)
    const off = await t.request('PATCH', `/manager/accounts/${LOGIN}`, {
      token: manager,
      body: { enable: 0, comment: 'dispute' },
    })
    expect(off.status).toBe(200)
    const a = await t.request('POST', `/manager/cashier/transactions/${id}/approve`, {
      token: manager,
      body: {},
    })
    const status = (await staffTx(id)).status_name
    // re-enable for the rest, then judge
    await t.request('PATCH', `/manager/accounts/${LOGIN}`, { token: manager, body: { enable: 1 } })
    customer = await t.customerToken()
    expect([a.status, a.json?.error, status]).toEqual([409, 'ACCOUNT_DISABLED', 'pending_approval'])
    // staff may still reject it: the hold returns
    const before = await balance()
    const rej = await t.request('POST', `/manager/cashier/transactions/${id}/reject`, {
      token: manager,
      body: { reason: 'dispute' },
    })
    expect(rej.status).toBe(200)
    expect((await balance()) - before).toBe(60)
  })

  test('a withdrawal of a customer whose withdrawals were closed since it was asked is not paid out', async () => {
    const id = await withdrawal(50)
    const cid = (await staffTx(id)).customer_id as number
    // no route closes them (the data is the customer's record): written as an admin tool would
    const setAllowed = async (v: number) => {
      await t.ctx.db.run(sql`update customers set withdrawal_allowed = ${v} where id = ${cid}`)
      await t.ports.get(AccountsPort).read.invalidateCustomer(cid)
    }
    await setAllowed(0)
    const a = await t.request('POST', `/manager/cashier/transactions/${id}/approve`, {
      token: manager,
      body: {},
    })
    const status = (await staffTx(id)).status_name
    await setAllowed(1)
    expect([a.status, a.json?.error, status]).toEqual([409, 'WITHDRAWAL_NOT_ALLOWED', 'pending_approval'])
    expect((await t.request('POST', `/cashier/transactions/${id}/cancel`, { token: customer })).status).toBe(
      200,
    )
  })

  test('confirming the wire of a deposit the customer cancelled: answered by what it did (review), not 409 after a change', async () => {
    const id = await deposit(100, 'wire')
    expect((await t.request('POST', `/cashier/transactions/${id}/cancel`, { token: customer })).status).toBe(
      200,
    )
    const r = await t.request('POST', `/manager/cashier/transactions/${id}/confirm-wire`, {
      token: manager,
      body: { amount: 100 },
    })
    const s = await staffTx(id)
    expect([r.status, r.json?.status_name, s.status_name]).toEqual([200, 'manual_review', 'manual_review'])
  })
})

describe('a payout with an unknown outcome keeps its hold', () => {
  /** The cashier's services with a wire provider of our own (the app's providers are not reachable). */
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

  test('a provider that sends the money and then times out: manual_review, flagged, the hold kept; staff settle it', async () => {
    const id = await withdrawal(50)
    const held = await balance()
    let sent = 0
    const ctx = cashierWith(async () => {
      sent++
      throw new Error('timeout waiting for the bank')
    })
    const view = await approveWithdrawal({ ctx, brandId: 1, staffId: 1, id, input: {} })
    expect(sent).toBe(1)
    expect([view.status_name, view.flagged]).toEqual(['manual_review', true])
    // the money may have left: nothing returns to the balance
    expect(await balance()).toBe(held)
    // the provider says it paid: staff record it
    const paid = await t.request('POST', `/manager/cashier/transactions/${id}/mark-paid`, {
      token: manager,
      body: {},
    })
    expect([paid.status, paid.json?.status_name]).toEqual([200, 'paid'])
    expect(await balance()).toBe(held)
  })

  test('from review, a payout the provider says it never sent fails and its hold returns', async () => {
    const id = await withdrawal(55)
    const held = await balance()
    const ctx = cashierWith(() => Promise.reject(new Error('connection reset')))
    expect((await approveWithdrawal({ ctx, brandId: 1, staffId: 1, id, input: {} })).status_name).toBe(
      'manual_review',
    )
    const failed = await t.request('POST', `/manager/cashier/transactions/${id}/payout-failed`, {
      token: manager,
      body: { reason: 'The bank never received it.' },
    })
    expect([failed.status, failed.json?.status_name]).toEqual([200, 'payout_failed'])
    expect((await balance()) - held).toBe(55)
  })

  test("the provider's definite refusal fails the payout and returns the hold", async () => {
    const id = await withdrawal(52)
    const held = await balance()
    const ctx = cashierWith(() => Promise.reject(new PayoutRefused('beneficiary account closed')))
    const view = await approveWithdrawal({ ctx, brandId: 1, staffId: 1, id, input: {} })
    expect(view.status_name).toBe('payout_failed')
    expect((await balance()) - held).toBe(52)
  })
})

// review of 90c0b29
describe("the provider's notice of a refund staff made", () => {
  const staffRefund = async (id: number) => {
    const r = await t.request('POST', `/manager/cashier/transactions/${id}/refund`, {
      token: manager,
      body: { note: 'customer asked' },
    })
    expect([r.status, r.json?.status_name]).toEqual([200, 'refunded'])
  }

  test("the provider's own notice of the refund staff made is not flagged as 'provider took it again'", async () => {
    const id = await credited(25)
    await staffRefund(id)
    const before = await balance()
    // staff refunded it at the provider: the provider reports that refund (same amount)
    expect((await hook(`evt-r-${id}`, 'payment.refunded', id, 2500)).status).toBe(200)
    const s = await staffTx(id)
    expect([s.status_name, s.flagged]).toEqual(['refunded', false])
    expect(await balance()).toBe(before)
    // recorded in the history all the same (the provider's word), nothing moved
    const last = s.history[s.history.length - 1]
    expect([last.actor, last.from, last.to]).toEqual(['provider:sandbox', 7, 7])
    expect(last.note).toContain('refund')
  })

  test('a second provider refund after its notice: the provider took it again (flagged)', async () => {
    const id = await credited(26)
    await staffRefund(id)
    expect((await hook(`evt-r-${id}`, 'payment.refunded', id, 2600)).status).toBe(200)
    expect((await staffTx(id)).flagged).toBe(false)
    const before = await balance()
    expect((await hook(`evt-r2-${id}`, 'payment.refunded', id, 2600)).status).toBe(200)
    const s = await staffTx(id)
    expect([s.status_name, s.flagged]).toEqual(['refunded', true])
    expect(s.staff_note).toContain('provider took it again')
    expect(await balance()).toBe(before)
  })

  test('a provider refund of another amount than the deposit staff refunded is not its notice: flagged', async () => {
    const id = await credited(27)
    await staffRefund(id)
    expect((await hook(`evt-r-${id}`, 'payment.refunded', id, 1000)).status).toBe(200)
    expect((await staffTx(id)).flagged).toBe(true)
  })

  test('a refund after a chargeback of a deposit staff refunded: still the provider taking it again', async () => {
    const id = await credited(28)
    await staffRefund(id)
    expect((await hook(`evt-d-${id}`, 'payment.disputed', id, 2800)).status).toBe(200)
    expect((await hook(`evt-r-${id}`, 'payment.refunded', id, 2800)).status).toBe(200)
    const s = await staffTx(id)
    expect(s.flagged).toBe(true)
    expect(s.history.filter((h: { note: string }) => h.note.includes('provider took it again')).length).toBe(
      2,
    )
  })
})

describe('a flag keeps the staff note it finds', () => {
  const noteOf = (id: number, note: string) =>
    t.ctx.db.run(sql`update cashier_transactions set staff_note = ${note} where id = ${id}`)

  test("an earlier note ('short by X, collect it') stays in view beside the new flag's", async () => {
    const id = await credited(21)
    await noteOf(id, 'chargeback not covered: the account is short by 5.00 USD; collect it from the customer')
    expect((await hook(`evt-f-${id}`, 'payment.failed', id, 2100)).status).toBe(200)
    const s = await staffTx(id)
    expect(s.flagged).toBe(true)
    expect(s.staff_note).toContain('short by 5.00 USD')
    expect(s.staff_note).toContain('provider reported failed for a credited deposit')
  })

  test('the note stays bounded: the earlier text is cut at its end (marked …), the new note kept whole', async () => {
    const id = await credited(22)
    await noteOf(id, 'x'.repeat(1990))
    expect((await hook(`evt-f-${id}`, 'payment.failed', id, 2200)).status).toBe(200)
    const s = await staffTx(id)
    expect(s.staff_note.length).toBeLessThanOrEqual(2000)
    expect(s.staff_note.startsWith('xxx')).toBe(true)
    expect(s.staff_note).toContain('x…\nprovider reported failed')
    expect(
      s.staff_note.endsWith(
        'provider reported failed for a credited deposit: check with the provider whether the money arrived',
      ),
    ).toBe(true)
  })
})

describe('a payout through a provider no longer configured', () => {
  test('is refused before the approval commits (503 PROVIDER_NOT_CONFIGURED), nothing sent, it stays pending', async () => {
    const id = await withdrawal(54)
    const held = await balance()
    await t.ctx.db.run(sql`update cashier_transactions set provider = 'retired' where id = ${id}`)
    const r = await t.request('POST', `/manager/cashier/transactions/${id}/approve`, {
      token: manager,
      body: {},
    })
    expect([r.status, r.json?.error]).toEqual([503, 'PROVIDER_NOT_CONFIGURED'])
    const s = await staffTx(id)
    expect([s.status_name, s.flagged]).toEqual(['pending_approval', false])
    expect(await balance()).toBe(held)
    // staff may still reject it: the hold returns
    const rejected = await t.request('POST', `/manager/cashier/transactions/${id}/reject`, {
      token: manager,
      body: { reason: 'The payout provider was retired.' },
    })
    expect([rejected.status, rejected.json?.status_name]).toEqual([200, 'cancelled'])
    expect((await balance()) - held).toBe(54)
  })

  test('the approve route documents the code', async () => {
    const doc = (await t.request('GET', '/swagger/json')).json
    const op = doc.paths['/manager/cashier/transactions/{id}/approve'].post
    expect(JSON.stringify(op.responses['503'])).toContain('PROVIDER_NOT_CONFIGURED')
    expect(op.description).toContain('PROVIDER_NOT_CONFIGURED')
  })
})

test("status_name's description names manual_review, which a customer's withdrawal may now show", async () => {
  const doc = JSON.stringify((await t.request('GET', '/swagger/json')).json)
  const described = [...doc.matchAll(/"description":"(spec 3\.1's name; a withdrawal's[^"]*)"/g)].map(
    (m) => m[1],
  )
  expect(described.length).toBeGreaterThan(0)
  for (const d of described) expect(d).toContain('manual_review')
})
