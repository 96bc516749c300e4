// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { ManualClock } from '../../src/kernel/clock'
import { PropPort } from '../../src/modules/prop'
import type { PurchaseSteps } from '../../src/modules/prop/context'
import { PURCHASE_STALE_MS } from '../../src/modules/prop/purchase-rollback'
import { makeTestApp, type TestApp } from '../support/app'

/**
 * A purchase that a crash leaves half-done is ended by the job prop.purchases.recover (issue 42): the
 * process "dies" between each pair of steps (the next step never starts: its call never returns, as in a
 * killed process nothing after the last commit runs), and the job, once the purchase is stale, gives back
 * exactly what its records say was taken (4.19's rollbacks), once, whatever runs it how often; a request
 * that wakes up after the job took its purchase cannot record another step.
 */

const clock = new ManualClock(Date.UTC(2026, 10, 24, 9, 0, 0))
let t: TestApp
let customer: string
let manager: string
let twoStep: number
/** its price (the payer's USD, as the account view shows balances) */
let fee: number
let steps: PurchaseSteps
let original: PurchaseSteps

beforeAll(async () => {
  t = await makeTestApp({ clock })
  customer = await t.customerToken()
  manager = await t.staffToken()
  const list = await t.request('GET', '/prop/programs', { token: customer })
  const program = list.json.rows.find((p: { name: string }) => p.name === 'Two-Step 10k')
  twoStep = program.id
  fee = program.price
  steps = t.ports.get(PropPort).steps
  original = { ...steps }
})
afterAll(() => t.close())

const balance = async (login: number) =>
  (await t.request('GET', `/manager/accounts/${login}`, { token: manager })).json.balance as number
const propOps = async (login: number) =>
  (
    (await t.request('GET', `/manager/accounts/${login}/operations?limit=500`, { token: manager })).json
      .rows as { reason: string; comment: string; amount: number }[]
  ).filter((o) => o.reason === 'TR_REASON_PROP')
const latestPurchase = async () =>
  (await t.request('GET', '/prop/purchases', { token: customer })).json.rows[0] as Record<string, any>

/** A step that never returns: the process died before it (nothing of it, nor after it, runs). */
const never = () => new Promise<never>(() => {})

/** Each crash point: the step that never starts, and what the job must then give back. */
const CRASHES: [keyof PurchaseSteps, string, string[], boolean][] = [
  // the row is written, the fee never taken
  ['takeFee', 'PAYMENT_FAILED', [], false],
  // the fee taken (and recorded with it), no account
  ['openAccount', 'ACCOUNT_CREATION_FAILED', ['PROP_CHALLENGE_PURCHASE_ROLLBACK'], true],
  // the account open (its login recorded with it), no initial balance
  ['initialBalance', 'INITIAL_BALANCE_FAILED', ['PROP_CHALLENGE_PURCHASE_ROLLBACK'], true],
  // the initial balance given (recorded with it), no challenge
  [
    'createChallenge',
    'CHALLENGE_CREATION_FAILED',
    ['PROP_CHALLENGE_PURCHASE_ROLLBACK', 'PROP_CHALLENGE_INITIAL_BALANCE_ROLLBACK'],
    true,
  ],
]

describe('a crash between the steps of a purchase', () => {
  for (const [stopsBefore, code, rollbacks, feeTaken] of CRASHES)
    test(`before ${stopsBefore}: the job rolls back exactly what was done, once`, async () => {
      const payerBefore = await balance(100001)
      const payerOpsBefore = (await propOps(100001)).length
      Object.assign(steps, original, { [stopsBefore]: never })
      // the request hangs where the process died; its answer never comes
      void t.request('POST', '/prop/challenge/buy', {
        token: customer,
        body: { program_id: twoStep, payer_login: 100001, idempotency_key: `crash-${stopsBefore}` },
      })
      let stuck: Record<string, any> = {}
      for (let i = 0; i < 200 && stuck.idempotency_key !== `crash-${stopsBefore}`; i++) {
        await Bun.sleep(10)
        stuck = (await latestPurchase()) ?? {}
      }
      // wait until the steps before the crash have committed
      await Bun.sleep(100)
      Object.assign(steps, original)
      stuck = await latestPurchase()
      expect(stuck.status_name).not.toBe('active')
      expect(await balance(100001)).toBe(feeTaken ? payerBefore - fee : payerBefore)

      // not stale yet: a purchase in progress is left alone
      await t.runJob('prop.purchases.recover')
      expect((await latestPurchase()).status_name).toBe(stuck.status_name)

      clock.advance(PURCHASE_STALE_MS + 1000)
      await t.runJob('prop.purchases.recover')
      const ended = await latestPurchase()
      expect(ended).toMatchObject({
        id: stuck.id,
        status_name: feeTaken ? 'refunded' : 'failed',
        failure_reason: code,
        can_retry: true,
        can_cancel: false,
      })
      // what was taken is given back, once, and nothing else is booked
      await t.runJob('prop.purchases.recover')
      clock.advance(PURCHASE_STALE_MS + 1000)
      await t.runJob('prop.purchases.recover')
      expect(await balance(100001)).toBe(payerBefore)
      const payerOps = (await propOps(100001)).slice(0, (await propOps(100001)).length - payerOpsBefore)
      const accountOps = ended.account_login ? await propOps(ended.account_login) : []
      const comments = [...payerOps, ...accountOps]
        .map((o) => o.comment)
        .filter((c) => c.endsWith('ROLLBACK'))
      expect(comments.sort()).toEqual([...rollbacks].sort())
      if (ended.account_login) expect(await balance(ended.account_login)).toBe(0)
      // the customer may buy again
      const again = await t.request('POST', '/prop/challenge/buy', {
        token: customer,
        body: { program_id: twoStep, payer_login: 100001, idempotency_key: `after-${stopsBefore}` },
      })
      expect(again.status).toBe(200)
    })

  test('a request that wakes up after the job took its purchase cannot record another step', async () => {
    const payerBefore = await balance(100001)
    let resume: () => void = () => {}
    const gate = new Promise<void>((r) => {
      resume = r
    })
    // the account step waits (a stalled process), then runs for real after the job has ended the purchase
    Object.assign(steps, original, {
      openAccount: async (...args: Parameters<PurchaseSteps['openAccount']>) => {
        await gate
        return original.openAccount(...args)
      },
    })
    const answer = t.request('POST', '/prop/challenge/buy', {
      token: customer,
      body: { program_id: twoStep, payer_login: 100001, idempotency_key: 'late-wakeup' },
    })
    let stuck: Record<string, any> = {}
    for (let i = 0; i < 200 && stuck.idempotency_key !== 'late-wakeup'; i++) {
      await Bun.sleep(10)
      stuck = (await latestPurchase()) ?? {}
    }
    await Bun.sleep(100)
    expect((await latestPurchase()).status_name).toBe('paid')
    clock.advance(PURCHASE_STALE_MS + 1000)
    await t.runJob('prop.purchases.recover')
    expect((await latestPurchase()).status_name).toBe('refunded')
    resume()
    const late = await answer
    Object.assign(steps, original)
    // its account transaction rolled back with its refused record: no account, the fee given back once
    expect([late.status, late.json.error]).toEqual([500, 'ACCOUNT_CREATION_FAILED'])
    const ended = await latestPurchase()
    expect(ended).toMatchObject({ status_name: 'refunded', account_login: 0 })
    expect(await balance(100001)).toBe(payerBefore)
    const refunds = (await propOps(100001)).filter(
      (o) => o.comment === 'PROP_CHALLENGE_PURCHASE_ROLLBACK' && o.amount > 0,
    )
    expect(refunds.length).toBe(new Set(refunds.map((o) => JSON.stringify(o))).size)
  })

  test('a step whose commit landed while it answered an error: what it recorded is given back', async () => {
    const payerBefore = await balance(100001)
    Object.assign(steps, original, {
      takeFee: async (...args: Parameters<PurchaseSteps['takeFee']>) => {
        await original.takeFee(...args)
        throw new Error('the commit landed, the answer was lost')
      },
    })
    const r = await t.request('POST', '/prop/challenge/buy', {
      token: customer,
      body: { program_id: twoStep, payer_login: 100001, idempotency_key: 'landed-fee' },
    })
    Object.assign(steps, original)
    expect([r.status, r.json.error]).toEqual([402, 'PAYMENT_FAILED'])
    expect(await latestPurchase()).toMatchObject({ status_name: 'refunded', payment_status: 'refunded' })
    expect(await balance(100001)).toBe(payerBefore)
  })

  test('the last step landed while it answered an error: the purchase is answered as bought, nothing given back', async () => {
    const payerBefore = await balance(100001)
    Object.assign(steps, original, {
      createChallenge: async (...args: Parameters<PurchaseSteps['createChallenge']>) => {
        await original.createChallenge(...args)
        throw new Error('the commit landed, the answer was lost')
      },
    })
    const r = await t.request('POST', '/prop/challenge/buy', {
      token: customer,
      body: { program_id: twoStep, payer_login: 100001, idempotency_key: 'landed-challenge' },
    })
    Object.assign(steps, original)
    expect(r.status).toBe(200)
    expect(r.json).toMatchObject({ accepted: true, purchase: { status_name: 'active' } })
    expect(r.json.challenge.id).toBeGreaterThan(0)
    expect(await balance(100001)).toBe(payerBefore - fee)
    expect(await balance(r.json.account.login)).toBeGreaterThan(0)
  })

  test('a rollback that fails is shown to the customer and retried by the job until it is done', async () => {
    const payerBefore = await balance(100001)
    let refusals = 1
    Object.assign(steps, original, {
      openAccount: async () => {
        throw new Error('injected failure')
      },
      refundFee: async (...args: Parameters<PurchaseSteps['refundFee']>) => {
        if (refusals-- > 0) throw new Error('the ledger is away')
        return original.refundFee(...args)
      },
    })
    const r = await t.request('POST', '/prop/challenge/buy', {
      token: customer,
      body: { program_id: twoStep, payer_login: 100001, idempotency_key: 'refund-retried' },
    })
    expect(r.json.error).toBe('ACCOUNT_CREATION_FAILED')
    expect(await latestPurchase()).toMatchObject({
      status_name: 'failed',
      payment_status: 'rollback_failed',
      next_action: 'CONTACT_SUPPORT',
    })
    expect(await balance(100001)).toBe(payerBefore - fee)
    // the job, once the purchase is stale, gives the fee back (the refund works again)
    clock.advance(PURCHASE_STALE_MS + 1000)
    await t.runJob('prop.purchases.recover')
    Object.assign(steps, original)
    expect(await latestPurchase()).toMatchObject({
      status_name: 'refunded',
      payment_status: 'refunded',
      next_action: 'RETRY_PURCHASE',
    })
    expect(await balance(100001)).toBe(payerBefore)
  })
})
