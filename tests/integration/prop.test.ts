// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { PropPort } from '../../src/modules/prop'
import { propPrograms } from '../../src/modules/prop/schema'
import { makeTestApp, type TestApp } from '../support/app'
import { evaluationProgram } from '../support/prop'

/**
 * Prop programs and purchases (spec 4.13, 4.14, 4.19, 7.4): staff validation of programs, the seven
 * purchase validations in order with their codes, the effects and finance operations, free programs,
 * idempotency (also concurrent), every step failure with exactly its rollbacks.
 */

let t: TestApp
let customer: string
let manager: string
let programs: Record<string, number>

beforeAll(async () => {
  t = await makeTestApp()
  customer = await t.customerToken()
  manager = await t.staffToken()
  const list = await t.request('GET', '/prop/programs', { token: customer })
  programs = Object.fromEntries(list.json.rows.map((p: { name: string; id: number }) => [p.name, p.id]))
})
afterAll(() => t.close())

const buy = (body: Record<string, unknown>, token = customer) =>
  t.request('POST', '/prop/challenge/buy', { token, body })
const balance = async (login: number) =>
  (await t.request('GET', `/manager/accounts/${login}`, { token: manager })).json.balance as number
const operations = async (login: number) =>
  (await t.request('GET', `/manager/accounts/${login}/operations?limit=500`, { token: manager })).json
    .rows as {
    op: string
    amount: number
    reason: string
    comment: string
    api_data: Record<string, unknown> | null
  }[]
const propOps = async (login: number) =>
  (await operations(login)).filter((o) => o.reason === 'TR_REASON_PROP')
const program = (over: Record<string, unknown> = {}) =>
  evaluationProgram(
    { profit_target_pct: 10, daily_loss_pct: 5, total_loss_pct: 10 },
    { name: `Test ${Math.random().toString(36).slice(2, 8)}`, price: 50, ...over },
  )

describe('programs', () => {
  test('the demo programs are on offer: free, two-step and one-step, with their profit split', async () => {
    const r = await t.request('GET', '/prop/programs', { token: customer })
    expect(
      r.json.rows.map((p: { name: string; price: number; profit_split: number; steps: unknown[] }) => [
        p.name,
        p.price,
        p.profit_split,
        p.steps.length,
      ]),
    ).toEqual([
      ['Free Trial 10k', 0, 0, 1],
      ['Two-Step 10k', 99, 0.8, 3],
      ['One-Step 10k', 149, 0.9, 2],
    ])
    const one = await t.request('GET', `/prop/programs/${programs['Two-Step 10k']}`, { token: customer })
    expect(one.json.steps[2]).toMatchObject({ index: 3, account_group: 'prop\\funded\\USD', phase_type: 1 })
    expect((await t.request('GET', '/prop/programs/999', { token: customer })).json.error).toBe(
      'PROGRAM_NOT_FOUND',
    )
  })

  test('staff: an invalid program is refused naming the field; a valid one is created and versioned', async () => {
    const save = (body: unknown) => t.request('POST', '/manager/prop/programs', { token: manager, body })
    const funded = {
      account_group: 'prop\\funded\\USD',
      phase_type: 1,
      profit_split: 0.8,
      rules: { profit_target_pct: 0, daily_loss_pct: 5, total_loss_pct: 10 },
    }
    const evaluation = program().steps[0]
    const cases: [unknown, string][] = [
      [program({ time_zone: 'Mars/Olympus' }), 'time_zone:'],
      [program({ steps: [funded, evaluation] }), 'steps.0.phase_type:'],
      [program({ steps: [evaluation, funded, funded] }), 'steps:'],
      [program({ steps: [{ ...evaluation, account_group: 'real\\USD' }] }), 'steps.0.account_group:'],
      [
        program({ steps: [evaluation, { ...funded, account_group: 'prop\\eval\\USD' }] }),
        'steps.1.account_group:',
      ],
      [program({ steps: [evaluation, { ...funded, profit_split: undefined }] }), 'steps.1.profit_split:'],
      [program({ steps: [{ ...evaluation, account_group: 'nope' }] }), 'steps.0.account_group:'],
      [program({ currency: 'EUR' }), 'steps.0.account_group:'],
      [
        program({ steps: [{ ...evaluation, rules: { ...evaluation!.rules, profit_target_pct: 0 } }] }),
        'steps.0.rules.profit_target_pct:',
      ],
    ]
    for (const [body, field] of cases) {
      const r = await save(body)
      expect([r.status, r.json.error, r.json.message.startsWith(field)], JSON.stringify(body)).toEqual([
        400,
        'INVALID_DATA',
        true,
      ])
    }
    const ok = await save(program({ name: 'Staff 1', steps: [evaluation, funded] }))
    expect(ok.status).toBe(200)
    expect(ok.json).toMatchObject({ version: 1, profit_split: 0.8 })
    expect((await save(program({ name: 'Staff 1' }))).json.error).toBe('PROGRAM_NAME_TAKEN')
    const edited = await t.request('PUT', `/manager/prop/programs/${ok.json.id}`, {
      token: manager,
      body: program({ name: 'Staff 1', price: 75 }),
    })
    expect(edited.json).toMatchObject({ version: 2, price: 75 })
    const off = await t.request('PUT', `/manager/prop/programs/${ok.json.id}/active`, {
      token: manager,
      body: { active: false },
    })
    expect(off.json.active).toBe(false)
    expect((await t.request('GET', '/manager/prop/programs', { token: customer })).status).toBe(403)
  })
})

describe('POST /prop/challenge/buy', () => {
  test('validations 1-7 in order, with the codes of 7.4', async () => {
    const id = programs['Two-Step 10k']!
    const staff = (body: unknown) => t.request('POST', '/manager/prop/programs', { token: manager, body })
    const disabled = (await staff(program({ active: false }))).json.id
    const expensive = (await staff(program({ price: 50_000 }))).json.id
    // steps 6 and 7 are checked when a program is saved; a group changed afterwards is caught at purchase
    const brandId = (await t.ctx.brands.byHost('localhost'))!.id
    const [real] = await t.ctx.db
      .insert(propPrograms)
      .values({
        brandId,
        name: 'Broken',
        priceMinor: 100,
        currency: 'USD',
        active: 1,
        timeZone: 'UTC',
        steps: JSON.stringify([{ ...program().steps[0], account_group: 'real\\USD' }]),
        createdAt: 0,
        updatedAt: 0,
      })
      .returning()
    const [gone] = await t.ctx.db
      .insert(propPrograms)
      .values({
        ...real!,
        id: undefined,
        name: 'Gone',
        steps: JSON.stringify([{ ...program().steps[0], account_group: 'deleted' }]),
      })
      .returning()
    const cases: [Record<string, unknown>, number, string][] = [
      [{ program_id: 999_999, payer_login: 100001 }, 404, 'PROGRAM_NOT_FOUND'],
      [{ program_id: disabled, payer_login: 100001 }, 400, 'PROGRAM_DISABLED'],
      [{ program_id: id, payer_login: 200001 }, 403, 'INVALID_PAYER_ACCOUNT'],
      [{ program_id: id, payer_login: 100002 }, 400, 'PAYER_ACCOUNT_NOT_REAL'],
      [{ program_id: id, payer_login: 100003 }, 400, 'CURRENCY_CONVERSION_REQUIRED'],
      [{ program_id: expensive, payer_login: 100001 }, 400, 'NOT_ENOUGH_FUNDS'],
      [{ program_id: gone!.id, payer_login: 100001 }, 400, 'INVALID_DEMO_GROUP'],
      [{ program_id: real!.id, payer_login: 100001 }, 400, 'DEMO_GROUP_REQUIRED'],
      [{ program_id: id }, 400, 'INVALID_DATA'],
    ]
    const before = await balance(100001)
    for (const [body, status, code] of cases) {
      const r = await buy(body)
      expect([JSON.stringify(body), r.status, r.json.error]).toEqual([JSON.stringify(body), status, code])
    }
    expect(await balance(100001)).toBe(before)
    expect((await t.request('GET', '/prop/purchases', { token: customer })).json.rows).toEqual([])
  })

  test('a paid purchase: fee, a DEMO account with its initial balance, the challenge; every field of the answer', async () => {
    const before = await balance(100001)
    const r = await buy({
      program_id: programs['Two-Step 10k'],
      payer_login: 100001,
      idempotency_key: 'buy-test-0001',
    })
    expect(r.status).toBe(200)
    const b = r.json
    expect(b).toMatchObject({ accepted: true, idempotent: false, must_change_password: true })
    expect(b.purchase).toMatchObject({
      status: 3,
      status_name: 'active',
      next_action: 'OPEN_CHALLENGE',
      payment_status: 'paid',
      activation_status: 'active',
      failure_reason: '',
      amount: 99,
      currency: 'USD',
      can_retry: false,
      can_cancel: false,
      payer_login: 100001,
    })
    expect(b.challenge).toMatchObject({
      status: 1,
      status_name: 'active',
      current_phase_index: 1,
      end_time: 0,
    })
    expect(b.account).toMatchObject({ group: 'prop\\eval\\USD', brand: 'Demo', currency: 'USD', enable: 1 })
    expect(b.temporary_password).toMatch(/^[A-Za-z2-9]{14}$/)
    expect(typeof b.payment_order).toBe('number')
    expect(typeof b.initial_balance_order).toBe('number')
    expect(await balance(100001)).toBe(before - 99)
    expect(await balance(b.account.login)).toBe(10_000)
    const apiData = {
      module: 'prop',
      program_id: programs['Two-Step 10k'],
      purchase_id: b.purchase.id,
      customer_id: b.purchase.customer_id,
      payer_login: 100001,
      idempotency_key: 'buy-test-0001',
    }
    expect(await propOps(100001)).toEqual([
      expect.objectContaining({
        op: 'OP_BALANCE_OUT',
        amount: -99,
        comment: 'PROP_CHALLENGE_PURCHASE',
        api_data: { ...apiData, operation: 'payment', challenge_login: null },
      }),
    ])
    expect(await operations(b.account.login)).toEqual([
      expect.objectContaining({
        op: 'OP_BALANCE_IN',
        amount: 10_000,
        reason: 'TR_REASON_PROP',
        comment: 'PROP_CHALLENGE_INITIAL_BALANCE',
        api_data: { ...apiData, operation: 'initial_balance', challenge_login: b.account.login },
      }),
    ])
    // the temporary password signs in to the challenge account
    const signIn = await t.request('POST', '/sign/in', {
      body: { login: b.account.login, password: b.temporary_password },
    })
    expect(signIn.status).toBe(200)
    // the challenge, with its phase, metric and progress
    const c = await t.request('GET', `/prop/challenges/${b.challenge.id}`, { token: customer })
    expect(c.json.phases).toHaveLength(1)
    expect(c.json.current_phase).toMatchObject({
      phase_index: 1,
      status_name: 'active',
      initial_balance: 10_000,
    })
    expect(c.json.latest_metric).toMatchObject({
      balance: 10_000,
      equity: 10_000,
      profit_target: 1000,
      trading_days: 0,
    })
    expect(c.json.current_phase.progress).toMatchObject({
      profit_target_pct: 10,
      daily_loss_limit_pct: 5,
      min_trading_days: 4,
      max_trading_days: 30,
    })
    expect(c.json.latest_breach).toBeNull()
    expect(c.json.purchase.id).toBe(b.purchase.id)
  })

  test('the same key again: the existing purchase with its challenges, idempotent, no password, nothing charged', async () => {
    const before = await balance(100001)
    const r = await buy({
      program_id: programs['Two-Step 10k'],
      payer_login: 100001,
      idempotency_key: 'buy-test-0001',
    })
    expect(r.json.idempotent).toBe(true)
    expect(r.json.temporary_password).toBeUndefined()
    expect(r.json.challenges).toHaveLength(1)
    expect(await balance(100001)).toBe(before)
  })

  test('20 concurrent identical requests: one purchase, one fee', async () => {
    const before = await balance(100001)
    const body = {
      program_id: programs['One-Step 10k'],
      payer_login: 100001,
      idempotency_key: 'buy-race-0001',
    }
    const all = await Promise.all(Array.from({ length: 20 }, () => buy(body)))
    expect(all.every((r) => r.status === 200)).toBe(true)
    expect(new Set(all.map((r) => r.json.purchase.id)).size).toBe(1)
    expect(all.filter((r) => !r.json.idempotent)).toHaveLength(1)
    expect(await balance(100001)).toBe(before - 149)
  })

  test('a free program: no fee operation, payment_order omitted', async () => {
    const before = (await propOps(100001)).length
    const r = await buy({ program_id: programs['Free Trial 10k'], payer_login: 100001 })
    expect(r.status).toBe(200)
    expect(r.json.payment_order).toBeUndefined()
    expect(r.json.purchase.payment_status).toBe('not_required')
    expect((await propOps(100001)).length).toBe(before)
    expect(await balance(r.json.account.login)).toBe(10_000)
  })

  test('each failing step answers its code and requests exactly the rollbacks of 4.19', async () => {
    const steps = t.ports.get(PropPort).steps
    const original = { ...steps }
    const boom = async () => {
      throw new Error('injected failure')
    }
    const cases: [keyof typeof steps, number, string, string, string[]][] = [
      ['takeFee', 402, 'PAYMENT_FAILED', 'failed', []],
      ['openAccount', 500, 'ACCOUNT_CREATION_FAILED', 'refunded', ['PROP_CHALLENGE_PURCHASE_ROLLBACK']],
      ['initialBalance', 500, 'INITIAL_BALANCE_FAILED', 'refunded', ['PROP_CHALLENGE_PURCHASE_ROLLBACK']],
      [
        'createChallenge',
        500,
        'CHALLENGE_CREATION_FAILED',
        'refunded',
        ['PROP_CHALLENGE_PURCHASE_ROLLBACK', 'PROP_CHALLENGE_INITIAL_BALANCE_ROLLBACK'],
      ],
    ]
    for (const [step, status, code, final, rollbacks] of cases) {
      Object.assign(steps, original, { [step]: boom })
      const payerBefore = await balance(100001)
      const opsBefore = (await propOps(100001)).length
      const r = await buy({
        program_id: programs['Two-Step 10k'],
        payer_login: 100001,
        idempotency_key: `fail-${step}`,
      })
      expect([step, r.status, r.json.error]).toEqual([step, status, code])
      Object.assign(steps, original)
      expect(await balance(100001)).toBe(payerBefore)
      const purchase = (await t.request('GET', '/prop/purchases', { token: customer })).json.rows[0]
      expect(purchase).toMatchObject({
        status_name: final,
        failure_reason: code,
        can_retry: true,
        can_cancel: false,
      })
      // the rollbacks, on the payer and on the challenge account
      const newPayerOps = (await propOps(100001)).slice(0, (await propOps(100001)).length - opsBefore)
      const challengeOps = purchase.account_login ? await propOps(purchase.account_login) : []
      const comments = [...newPayerOps, ...challengeOps]
        .map((o) => o.comment)
        .filter((c) => c.endsWith('ROLLBACK'))
      expect([step, comments.sort()]).toEqual([step, [...rollbacks].sort()])
      if (purchase.account_login) expect(await balance(purchase.account_login)).toBe(0)
      // the same key afterwards: the failed purchase, not a new one
      const again = await buy({
        program_id: programs['Two-Step 10k'],
        payer_login: 100001,
        idempotency_key: `fail-${step}`,
      })
      expect([again.json.idempotent, again.json.purchase.failure_reason]).toEqual([true, code])
    }
  })
})
