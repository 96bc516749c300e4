// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { ManualClock } from '../../src/kernel/clock'
import { outbox } from '../../src/kernel/events/schema'
import { makeTestApp, type TestApp } from '../support/app'
import * as F from '../support/files'
import { PERSONAL_ANSWERS } from '../support/kyc'

/**
 * KYC (spec 4.10 and the back office): every route with its error codes, file ownership, the staff review
 * flow with reasons and staff-only comments, risk, settings, document expiry and the tier gates on
 * deposits and withdrawals.
 */

const DAY = 86_400_000
const clock = new ManualClock(Date.now())
let t: TestApp
let customer: string
let beta: string
let manager: string
let me: number

const PERSONAL = PERSONAL_ANSWERS

beforeAll(async () => {
  t = await makeTestApp({ clock })
  customer = await t.customerToken()
  beta = await t.customerToken('beta@example.com', 'beta-pass-1', 'beta.localhost')
  manager = await t.staffToken()
  me = (await t.request('GET', '/customer/kyc', { token: customer })).json.customer_id
})
afterAll(() => t.close())

const get = (path: string, token = customer) => t.request('GET', path, { token })
const post = (path: string, body: unknown, token = customer) => t.request('POST', path, { token, body })
const upload = async (token = customer, host = 'localhost') => {
  const f = new FormData()
  f.append('file', new File([F.PNG], 'scan.png', { type: 'image/png' }))
  f.append('purpose', 'kyc_document')
  return (await t.request('POST', '/upload', { token, form: f, host })).json.file_id as string
}
const attach = async (step: string, document_type: string, valid_until?: string) =>
  post('/customer/kyc/documents', { file_id: await upload(), step, document_type, valid_until })
const stepOf = (profile: { steps: { id: string }[] }, id: string) =>
  profile.steps.find((s) => s.id === id) as Record<string, any>
const decide = (step: string, decision: string, extra: Record<string, string> = {}) =>
  post(`/manager/kyc/profiles/${me}/steps/${step}/decision`, { decision, ...extra }, manager)
const deposit = (amount: number, method = 'wire') =>
  post('/cashier/deposit', { login: 100001, method, amount })

describe('customer routes (4.10)', () => {
  test('profile and one step; an unknown step is 404 KYC_STEP_NOT_FOUND; staff cannot call them', async () => {
    const p = await get('/customer/kyc')
    expect(p.status).toBe(200)
    expect(p.json).toMatchObject({ status: 'not_started' })
    // the AML rating is staff's (tipping off): the customer's view has none
    expect(p.json).not.toHaveProperty('risk_level')
    expect(p.json.gates).toEqual({
      deposit_limit: { USD: 2000, EUR: 2000, GBP: 1500 },
      withdrawal_allowed: false,
      withdrawal_requires: ['identity', 'address'],
      deposit_unlimited_requires: ['personal', 'identity', 'address'],
    })
    const s = await get('/customer/kyc/steps/identity')
    expect(s.json).toMatchObject({ id: 'identity', status: 'not_started', documents: [] })
    expect(s.json.documents_required).toEqual({
      types: ['passport', 'id_card', 'driving_licence'],
      min: 1,
      valid_until_required: true,
    })
    expect((await get('/customer/kyc/steps/nothing')).json.error).toBe('KYC_STEP_NOT_FOUND')
    expect((await get('/customer/kyc/steps/Bad-Code')).json.error).toBe('INVALID_DATA')
    expect((await get('/customer/kyc', manager)).status).toBe(403)
    expect((await t.request('GET', '/customer/kyc')).status).toBe(401)
  })

  test('answers are checked against the questions, naming the answer', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ ...PERSONAL, date_of_birth: '2015-01-01' }, 'answers.date_of_birth'],
      [{ ...PERSONAL, date_of_birth: '1990-02-30' }, 'answers.date_of_birth'],
      [{ ...PERSONAL, nationality: 'Britain' }, 'answers.nationality'],
      [{ ...PERSONAL, first_name: 'x'.repeat(101) }, 'answers.first_name'],
      [{ ...PERSONAL, favourite_colour: 'blue' }, 'answers.favourite_colour'],
    ]
    for (const [answers, field] of cases) {
      const r = await post('/customer/kyc/steps/personal/submit', { answers })
      expect(r.status).toBe(400)
      expect(r.json.message.startsWith(`${field}:`)).toBe(true)
    }
    const economic = await post('/customer/kyc/steps/economic/submit', {
      answers: {
        employment_status: 'employed',
        annual_income: '25k-100k',
        source_of_funds: 'salary',
        trading_experience: 'none',
        understands_leverage_risk: false,
      },
    })
    expect(economic.json.message).toStartWith('answers.understands_leverage_risk:')
    // nothing was half-written
    expect((await get('/customer/kyc')).json.status).toBe('not_started')
    const ok = await post('/customer/kyc/steps/personal/submit', { answers: PERSONAL })
    expect(ok.json).toMatchObject({ id: 'personal', status: 'submitted', answers: PERSONAL })
    expect((await get('/customer/kyc')).json.status).toBe('in_progress')
    // a submitted step is not submitted again
    const again = await post('/customer/kyc/steps/personal/submit', { answers: PERSONAL })
    expect([again.status, again.json.error]).toEqual([409, 'KYC_STATE_CONFLICT'])
  })

  test("documents: only the customer's own upload; types, validity and step checked; listed newest first", async () => {
    const theirs = await upload(beta, 'beta.localhost')
    const foreign = await post('/customer/kyc/documents', {
      file_id: theirs,
      step: 'identity',
      document_type: 'passport',
      valid_until: '2031-01-01',
    })
    expect([foreign.status, foreign.json.error]).toEqual([404, 'FILE_NOT_FOUND'])
    expect((await attach('identity', 'selfie', '2031-01-01')).json.message).toStartWith('document_type:')
    expect((await attach('identity', 'passport')).json.message).toStartWith('valid_until:')
    expect((await attach('identity', 'passport', '2020-01-01')).json.message).toStartWith('valid_until:')
    expect((await attach('personal', 'passport', '2031-01-01')).json.error).toBe('INVALID_DATA')
    expect((await attach('nothing', 'passport', '2031-01-01')).json.error).toBe('KYC_STEP_NOT_FOUND')
    // a document step is not submitted without its documents
    const early = await post('/customer/kyc/steps/identity/submit', {})
    expect([early.status, early.json.error]).toEqual([400, 'KYC_DOCUMENTS_MISSING'])

    const validUntil = new Date(clock.now() + 30 * DAY).toISOString().slice(0, 10)
    const id = await attach('identity', 'passport', validUntil)
    expect(id.status).toBe(200)
    expect(id.json.document).toMatchObject({ step: 'identity', status: 'pending', valid_until: validUntil })
    expect(id.json.document.staff_comment).toBeUndefined()
    expect((await attach('address', 'utility_bill')).status).toBe(200)
    const list = await get('/customer/kyc/documents')
    expect(list.json.rows.map((d: { step: string }) => d.step)).toEqual(['address', 'identity'])
    // the other customer sees none of them
    expect(
      (await t.request('GET', '/customer/kyc/documents', { token: beta, host: 'beta.localhost' })).json.rows,
    ).toEqual([])
    for (const step of ['identity', 'address'])
      expect((await post(`/customer/kyc/steps/${step}/submit`, {})).json.status).toBe('submitted')
  })
})

describe('staff review', () => {
  test('list in progress, read a profile of the brand only, decide steps and documents with reasons', async () => {
    const list = await get('/manager/kyc/profiles?status=in_progress', manager)
    expect(list.json.rows.map((r: { customer_id: number }) => r.customer_id)).toContain(me)
    expect((await get('/manager/kyc/profiles?status=nope', manager)).json.message).toStartWith(
      'query status:',
    )
    const betaId = (await t.request('GET', '/customer/kyc', { token: beta, host: 'beta.localhost' })).json
      .customer_id
    // the Demo brand's staff do not see a Beta customer
    expect((await get(`/manager/kyc/profiles/${betaId}`, manager)).json.error).toBe('KYC_PROFILE_NOT_FOUND')
    expect((await get('/manager/kyc/profiles', customer)).status).toBe(403)

    expect((await decide('identity', 'review')).json.status).toBe('in_progress')
    const profile = (await get(`/manager/kyc/profiles/${me}`, manager)).json
    expect(stepOf(profile, 'identity').status).toBe('in_review')
    const doc = stepOf(profile, 'address').documents[0]
    // reject the address document with a reason for the customer and a comment for staff
    const rejected = await post(
      `/manager/kyc/documents/${doc.id}/decision`,
      { decision: 'reject', reason: 'The bill is older than 3 months', comment: 'dated 2019' },
      manager,
    )
    expect(rejected.json.document).toMatchObject({ status: 'rejected', staff_comment: 'dated 2019' })
    const twice = await post(`/manager/kyc/documents/${doc.id}/decision`, { decision: 'approve' }, manager)
    expect([twice.status, twice.json.error]).toEqual([409, 'KYC_STATE_CONFLICT'])
    expect(
      (await post('/manager/kyc/documents/999999/decision', { decision: 'approve' }, manager)).json.error,
    ).toBe('KYC_DOCUMENT_NOT_FOUND')
    // resubmission needs a reason
    expect((await decide('address', 'resubmit')).json.message).toStartWith('reason:')
    const resubmit = await decide('address', 'resubmit', {
      reason: 'Please upload a recent bill',
      comment: 'second try',
    })
    expect(stepOf(resubmit.json, 'address').status).toBe('resubmission_requested')
    expect(resubmit.json.status).toBe('resubmission_requested')
    expect((await decide('nothing', 'approve')).json.error).toBe('KYC_STEP_NOT_FOUND')
    expect((await decide('economic', 'approve')).json.error).toBe('KYC_STATE_CONFLICT')

    // the customer sees the reasons, never the staff comments
    const mine = await get('/customer/kyc')
    const text = JSON.stringify(mine.json)
    expect(text).toContain('Please upload a recent bill')
    expect(text).toContain('The bill is older than 3 months')
    expect(text).not.toContain('dated 2019')
    expect(text).not.toContain('second try')
    expect(text).not.toContain('reviewed_by')
  })

  test('resubmitted, approved: the profile is approved, kyc.approved, and the gates open', async () => {
    expect((await attach('address', 'bank_statement')).status).toBe(200)
    expect((await post('/customer/kyc/steps/address/submit', {})).json.status).not.toBe('rejected')
    for (const step of ['personal', 'identity', 'address'])
      expect((await decide(step, 'approve')).status).toBe(200)
    const mine = (await get('/customer/kyc')).json
    expect(stepOf(mine, 'identity').documents[0].status).toBe('approved')
    expect(mine.gates).toMatchObject({
      deposit_limit: null,
      withdrawal_allowed: true,
      withdrawal_requires: [],
    })
    const economic = await post('/customer/kyc/steps/economic/submit', {
      answers: {
        employment_status: 'employed',
        annual_income: '25k-100k',
        source_of_funds: 'salary',
        trading_experience: '1-3y',
        understands_leverage_risk: true,
      },
    })
    expect(economic.status).toBe(200)
    const approved = await decide('economic', 'approve')
    expect(approved.json.status).toBe('approved')
    await t.settle()
    const topics = (await t.ctx.db.select({ topic: outbox.topic }).from(outbox)).map((e) => e.topic)
    expect(topics).toEqual(expect.arrayContaining(['kyc.submitted', 'kyc.approved']))
  })

  test('risk level: set with a staff comment, invalid levels refused', async () => {
    const r = await t.request('PUT', `/manager/kyc/profiles/${me}/risk`, {
      token: manager,
      body: { risk_level: 'high', comment: 'PEP match' },
    })
    expect(r.json).toMatchObject({ risk_level: 'high', risk_comment: 'PEP match' })
    const bad = await t.request('PUT', `/manager/kyc/profiles/${me}/risk`, {
      token: manager,
      body: { risk_level: 'extreme' },
    })
    expect(bad.json.message).toStartWith('risk_level:')
    const mine = (await get('/customer/kyc')).json
    expect([mine.risk_level, mine.risk_comment]).toEqual([undefined, undefined])
    expect(JSON.stringify(mine)).not.toContain('high')
  })

  test('an expired document expires its step and asks the customer again', async () => {
    clock.advance(31 * DAY)
    await t.runJob('kyc.expire')
    customer = await t.customerToken()
    manager = await t.staffToken()
    beta = await t.customerToken('beta@example.com', 'beta-pass-1', 'beta.localhost')
    const mine = (await get('/customer/kyc')).json
    expect(stepOf(mine, 'identity').status).toBe('expired')
    expect(stepOf(mine, 'identity').documents[0].status).toBe('expired')
    expect(mine.status).toBe('expired')
    expect(mine.gates.withdrawal_allowed).toBe(false)
  })
})

describe('settings and tier gates', () => {
  test('settings: read, refuse an invalid set naming the field, replace', async () => {
    const s = await get('/manager/kyc/settings', manager)
    expect(s.json.steps.map((x: { code: string }) => x.code)).toEqual([
      'personal',
      'identity',
      'address',
      'economic',
    ])
    const put = (body: unknown) => t.request('PUT', '/manager/kyc/settings', { token: manager, body })
    const badTier = await put({ ...s.json, tiers: { ...s.json.tiers, withdrawal_after: ['selfie'] } })
    expect([badTier.status, badTier.json.message]).toEqual([
      400,
      expect.stringMatching(/^tiers\.withdrawal_after/),
    ])
    const badStep = await put({ ...s.json, steps: [{ code: 'x', title: '' }] })
    expect(badStep.json.message).toStartWith('steps.0.')
    const ok = await put({
      ...s.json,
      tiers: { ...s.json.tiers, deposit_limit_unverified: { USD: 100 }, withdrawal_after: ['personal'] },
    })
    expect(ok.status).toBe(200)
    expect((await get('/manager/kyc/settings', manager)).json.tiers.deposit_limit_unverified).toEqual({
      USD: 100,
    })
    expect((await put(s.json)).status).toBe(200)
  })

  test('deposits beyond the limit before approval are refused; withdrawals wait for the required steps', async () => {
    // the Beta customer has done nothing: 2,000 USD before approval, counted over open and credited deposits
    const betaPost = (path: string, body: unknown) =>
      t.request('POST', path, { token: beta, body, host: 'beta.localhost' })
    const methods = await t.request('GET', '/cashier/methods?login=200001', {
      token: beta,
      host: 'beta.localhost',
    })
    expect(methods.status).toBe(200)
    const method = methods.json.methods.find((m: { type: string }) => m.type === 'bank_wire').code
    expect((await betaPost('/cashier/deposit', { login: 200001, method, amount: 1500 })).status).toBe(200)
    const over = await betaPost('/cashier/deposit', { login: 200001, method, amount: 600 })
    expect([over.status, over.json.error]).toEqual([403, 'KYC_LIMIT_EXCEEDED'])
    const w = await betaPost('/cashier/withdrawal', { login: 200001, method, amount: 10 })
    expect([w.status, w.json.error]).toEqual([403, 'KYC_REQUIRED'])
    // the Demo customer's expired identity closes withdrawals again
    const mine = await post('/cashier/withdrawal', { login: 100001, method: 'wire', amount: 10 })
    expect(mine.json.error).toBe('KYC_REQUIRED')
    expect((await deposit(100)).status).toBe(200)
  })
})
