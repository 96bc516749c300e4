// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { and, eq } from 'drizzle-orm'
import { ManualClock } from '../../src/kernel/clock'
import { outbox } from '../../src/kernel/events/schema'
import type { Logger } from '../../src/kernel/logger'
import { kycProfiles, kycSettings } from '../../src/modules/kyc/schema'
import { makeTestApp, type TestApp } from '../support/app'
import * as F from '../support/files'
import { PERSONAL_ANSWERS } from '../support/kyc'
import { addBetaStaff } from '../support/staff'

/**
 * The KYC probe's findings, fixed: settings refuse unknown keys and settings no answer could pass; a
 * withdrawal is checked against KYC again when staff approve it; a rejected profile deposits nothing and
 * takes no more documents or submissions; an undated document keeps its step approved; staff open the
 * files they review; the profile status follows a settings change.
 */

const DAY = 86_400_000
const ECONOMIC = {
  employment_status: 'employed',
  annual_income: '25k-100k',
  source_of_funds: 'salary',
  trading_experience: '1-3y',
  understands_leverage_risk: true,
}
const dateIn = (now: number, days: number) => new Date(now + days * DAY).toISOString().slice(0, 10)

/** A client of one test app as the demo customer and the demo manager. */
async function client(t: TestApp) {
  const customer = await t.customerToken()
  const manager = await t.staffToken()
  const get = (path: string, token = customer) => t.request('GET', path, { token })
  const post = (path: string, body: unknown, token = customer) => t.request('POST', path, { token, body })
  const put = (path: string, body: unknown, token = manager) => t.request('PUT', path, { token, body })
  const upload = async (bytes: Uint8Array = F.PNG, name = 'scan.png') => {
    const f = new FormData()
    f.append('file', new File([bytes as Uint8Array<ArrayBuffer>], name))
    f.append('purpose', 'kyc_document')
    return (await t.request('POST', '/upload', { token: customer, form: f })).json.file_id as string
  }
  const attach = async (step: string, document_type: string, valid_until?: string, fileId?: string) =>
    post('/customer/kyc/documents', {
      file_id: fileId ?? (await upload()),
      step,
      document_type,
      ...(valid_until ? { valid_until } : {}),
    })
  const me = (await get('/customer/kyc')).json.customer_id as number
  const decide = (step: string, decision: string, extra: Record<string, string> = {}) =>
    post(`/manager/kyc/profiles/${me}/steps/${step}/decision`, { decision, ...extra }, manager)
  const ok = (r: { status: number; text: string }) => {
    if (r.status !== 200) throw new Error(`expected 200, got ${r.status} ${r.text}`)
    return r
  }
  /** Every step of the default settings submitted; `approve` of them approved. */
  const submitAll = async (approve: string[]) => {
    const now = t.ctx.clock.now()
    ok(await post('/customer/kyc/steps/personal/submit', { answers: PERSONAL_ANSWERS }))
    ok(await attach('identity', 'passport', dateIn(now, 400)))
    ok(await post('/customer/kyc/steps/identity/submit', {}))
    ok(await attach('address', 'utility_bill'))
    ok(await post('/customer/kyc/steps/address/submit', {}))
    ok(await post('/customer/kyc/steps/economic/submit', { answers: ECONOMIC }))
    for (const s of approve) ok(await decide(s, 'approve'))
  }
  const approvedEvents = async () => {
    await t.settle()
    return (await t.ctx.db.select({ topic: outbox.topic }).from(outbox)).filter(
      (e) => e.topic === 'kyc.approved',
    ).length
  }
  return { customer, manager, get, post, put, upload, attach, me, decide, ok, submitAll, approvedEvents }
}

describe('settings that cannot work are refused (findings 1 and 8)', () => {
  let t: TestApp
  let c: Awaited<ReturnType<typeof client>>
  let defaults: any
  beforeAll(async () => {
    t = await makeTestApp()
    c = await client(t)
    defaults = (await c.get('/manager/kyc/settings', c.manager)).json
  })
  afterAll(() => t.close())
  const save = (body: unknown) => c.put('/manager/kyc/settings', body)
  const refused = async (body: unknown, field: string) => {
    const r = await save(body)
    expect([r.status, r.json?.error]).toEqual([400, 'INVALID_DATA'])
    expect(r.json.message).toStartWith(field)
    // nothing of it was saved
    expect((await c.get('/manager/kyc/settings', c.manager)).json).toEqual(defaults)
  }

  test('an unknown key anywhere is 400 naming it, never dropped (a misspelt tier would open withdrawals)', async () => {
    const { withdrawal_after, ...tiers } = defaults.tiers
    await refused(
      { steps: defaults.steps, tiers: { ...tiers, withdrawl_after: withdrawal_after } },
      'tiers.withdrawl_after',
    )
    const steps = structuredClone(defaults.steps)
    steps[1].documents = { types: steps[1].documents.types, min: 1, valid_until_requried: true }
    await refused({ steps, tiers: defaults.tiers }, 'steps.1.documents.valid_until_requried')
    const q = structuredClone(defaults.steps)
    q[0].questions[2].minimum_age = 18
    await refused({ steps: q, tiers: defaults.tiers }, 'steps.0.questions.2.minimum_age')
    const st = structuredClone(defaults.steps)
    st[2].optional = true
    await refused({ steps: st, tiers: defaults.tiers }, 'steps.2.optional')
    await refused({ ...defaults, version: 2 }, 'version')
    // the customer still needs identity and address approved to withdraw
    expect((await c.get('/customer/kyc')).json.gates.withdrawal_requires).toEqual(['identity', 'address'])
  })

  test("stored settings with a key this release does not know are still the brand's (the key dropped), not the defaults", async () => {
    const own = { ...defaults, tiers: { ...defaults.tiers, deposit_limit_unverified: { USD: 10 } } }
    expect((await save(own)).status).toBe(200)
    // a newer release's key (a deploy's two versions side by side), or an operator's edit
    const [row] = await t.ctx.db.select().from(kycSettings)
    const stored = JSON.parse(row!.settings)
    stored.tiers.withdrawal_after_days = 3
    stored.steps[0].questions[0].hint = 'as in your passport'
    await t.ctx.db.update(kycSettings).set({ settings: JSON.stringify(stored) })
    expect((await c.get('/manager/kyc/settings', c.manager)).json).toEqual(own)
    expect((await c.get('/customer/kyc')).json.gates.deposit_limit).toEqual({ USD: 10 })
    expect((await save(defaults)).status).toBe(200)
  })

  test('a date question with min_age above max_age, two questions with one key', async () => {
    const ages = structuredClone(defaults.steps)
    Object.assign(ages[0].questions[2], { min_age: 60, max_age: 30 })
    await refused({ steps: ages, tiers: defaults.tiers }, 'steps.0.questions.2.min_age')
    const twice = structuredClone(defaults.steps)
    twice[0].questions.push({ key: 'first_name', label: 'Age', type: 'number', min: 18 })
    await refused({ steps: twice, tiers: defaults.tiers }, 'steps.0.questions.8.key')
    // what can work is still saved: one age, keys in different steps, limits in any currency a group may hold
    const fine = structuredClone(defaults.steps)
    Object.assign(fine[0].questions[2], { min_age: 30, max_age: 30 })
    fine[3].questions.push({ key: 'first_name', label: 'Employer first name', type: 'text' })
    const saved = await save({
      steps: fine,
      tiers: {
        ...defaults.tiers,
        deposit_limit_unverified: { USD: 2000, USC: 200_000, CHF: 1000, JPY: 300_000, BTC: 0.5 },
      },
    })
    expect(saved.status).toBe(200)
    expect(saved.json.tiers.deposit_limit_unverified).toEqual({
      USD: 2000,
      USC: 200_000,
      CHF: 1000,
      JPY: 300_000,
      BTC: 0.5,
    })
  })
})

describe('a rejected profile (findings 2, 3 and 7)', () => {
  let t: TestApp
  let c: Awaited<ReturnType<typeof client>>
  beforeAll(async () => {
    t = await makeTestApp()
    c = await client(t)
  })
  afterAll(() => t.close())

  test('a withdrawal asked while KYC allowed it is refused at approval once the identity is rejected', async () => {
    await c.submitAll(['personal', 'identity', 'address', 'economic'])
    const w = await c.post('/cashier/withdrawal', { login: 100001, method: 'wire', amount: 50 })
    expect(w.status).toBe(200)
    const id = w.json.transaction.id
    const staffTx = async () =>
      (await c.get(`/manager/cashier/transactions/${id}`, c.manager)).json as Record<string, any>
    const before = await staffTx()
    const balance = async () => (await t.request('GET', '/account/me', { token: await t.userToken() })).json
    const held = await balance()
    expect((await c.decide('identity', 'reject', { reason: 'the passport is forged' })).json.status).toBe(
      'rejected',
    )
    const approve = await t.request('POST', `/manager/cashier/transactions/${id}/approve`, {
      token: c.manager,
      body: {},
    })
    expect([approve.status, approve.json.error]).toEqual([403, 'KYC_REQUIRED'])
    expect(approve.json.message).toContain('identity')
    // nothing half-written: still waiting for staff, no payout asked, the held money unchanged
    const after = await staffTx()
    expect([after.status_name, after.provider_ref ?? null]).toEqual([
      before.status_name,
      before.provider_ref ?? null,
    ])
    expect(after.history.length).toBe(before.history.length)
    expect((await balance()).balance).toBe(held.balance)
    // staff can still give the money back
    const reject = await t.request('POST', `/manager/cashier/transactions/${id}/reject`, {
      token: c.manager,
      body: { reason: 'KYC rejected' },
    })
    expect(reject.status).toBe(200)
    // one no longer pending answers by its state, not by KYC
    const again = await t.request('POST', `/manager/cashier/transactions/${id}/approve`, {
      token: c.manager,
      body: {},
    })
    expect([again.status, again.json.error]).toEqual([409, 'TRANSACTION_STATE_CONFLICT'])
  })

  test('attaching documents and submitting steps answer 409 KYC_STATE_CONFLICT; nothing is kept', async () => {
    // the profile is rejected (identity, above); staff ask for address and personal again, which would
    // otherwise take a document and a submission
    for (const step of ['address', 'personal'])
      expect((await c.decide(step, 'resubmit', { reason: 'please send it again' })).status).toBe(200)
    const docsBefore = (await c.get('/customer/kyc/documents')).json.rows.length
    const a = await c.attach('address', 'bank_statement')
    expect([a.status, a.json.error]).toEqual([409, 'KYC_STATE_CONFLICT'])
    expect(a.json.message).toContain('rejected')
    expect((await c.get('/customer/kyc/documents')).json.rows.length).toBe(docsBefore)
    const s = await c.post('/customer/kyc/steps/personal/submit', { answers: PERSONAL_ANSWERS })
    expect([s.status, s.json.error]).toEqual([409, 'KYC_STATE_CONFLICT'])
    const p = (await c.get('/customer/kyc')).json
    expect(p.status).toBe('rejected')
    expect(p.steps.map((x: any) => [x.id, x.status])).toEqual([
      ['personal', 'resubmission_requested'],
      ['identity', 'rejected'],
      ['address', 'resubmission_requested'],
      ['economic', 'approved'],
    ])
  })

  test('a rejected profile deposits nothing (limit 0), and withdraws while its withdrawal steps are approved', async () => {
    const t2 = await makeTestApp()
    try {
      const c2 = await client(t2)
      await c2.submitAll(['personal', 'identity', 'address', 'economic'])
      expect((await c2.get('/customer/kyc')).json.gates.deposit_limit).toBeNull()
      // appropriateness rejected: the profile is rejected, every other step approved
      expect((await c2.decide('economic', 'reject', { reason: 'not appropriate' })).json.status).toBe(
        'rejected',
      )
      const p = (await c2.get('/customer/kyc')).json
      expect(p.gates).toMatchObject({ deposit_limit: { USD: 0, EUR: 0, GBP: 0 }, withdrawal_allowed: true })
      const dep = await c2.post('/cashier/deposit', { login: 100001, method: 'wire', amount: 100 })
      expect([dep.status, dep.json.error]).toEqual([403, 'KYC_LIMIT_EXCEEDED'])
      const methods = (await c2.get('/cashier/methods?login=100001')).json
      expect([methods.kyc_status, methods.deposit_limit_remaining]).toEqual(['rejected', 0])
      const w = await c2.post('/cashier/withdrawal', { login: 100001, method: 'wire', amount: 50 })
      expect(w.status).toBe(200)
      const approve = await t2.request(
        'POST',
        `/manager/cashier/transactions/${w.json.transaction.id}/approve`,
        {
          token: c2.manager,
          body: {},
        },
      )
      expect(approve.status).toBe(200)
    } finally {
      await t2.close()
    }
  })
})

describe('expiry (finding 4)', () => {
  const clock = new ManualClock(Date.now())
  let t: TestApp
  beforeAll(async () => {
    t = await makeTestApp({ clock })
  })
  afterAll(() => t.close())

  test('an approved step keeps an undated document valid when its dated one expires', async () => {
    const c = await client(t)
    expect((await c.attach('address', 'utility_bill', dateIn(clock.now(), 10))).status).toBe(200)
    const undated = await c.attach('address', 'bank_statement')
    expect([undated.status, undated.json.document.valid_until]).toEqual([200, null])
    expect((await c.post('/customer/kyc/steps/address/submit', {})).status).toBe(200)
    expect((await c.decide('address', 'approve')).status).toBe(200)
    clock.advance(11 * DAY)
    await t.runJob('kyc.expire')
    const c2 = await client(t)
    const step = (await c2.get('/customer/kyc/steps/address')).json
    const docs = Object.fromEntries(step.documents.map((d: any) => [d.document_type, d.status]))
    expect(docs).toEqual({ utility_bill: 'expired', bank_statement: 'approved' })
    expect(step.status).toBe('approved')
  })
})

describe('staff open the files they review (finding 5)', () => {
  const lines: { level: string; msg: string; fields?: Record<string, unknown> }[] = []
  const logger: Logger = { log: (level, msg, fields) => void lines.push({ level, msg, fields }) }
  let t: TestApp
  let c: Awaited<ReturnType<typeof client>>
  beforeAll(async () => {
    t = await makeTestApp({ logger })
    c = await client(t)
    await addBetaStaff(t, [['MANAGER', 1, 'manager-pass-1']])
  })
  afterAll(() => t.close())
  const file = (id: number, token: string, host = 'localhost') =>
    t.request('GET', `/manager/kyc/documents/${id}/file`, { token, host })

  test('a manager and an admin get the stored file with the download headers, and each opening is logged', async () => {
    const png = await c.attach('identity', 'passport', dateIn(t.ctx.clock.now(), 400))
    const pdf = await c.attach('address', 'bank_statement', undefined, await c.upload(F.PDF, 'statement.pdf'))
    const admin = await t.staffToken(2, 'admin-pass-1')
    for (const [doc, token, type, disposition] of [
      [png.json.document, c.manager, 'image/png', 'inline'],
      [pdf.json.document, admin, 'application/pdf', 'attachment'],
    ] as const) {
      lines.length = 0
      const r = await file(doc.id, token)
      expect(r.status).toBe(200)
      expect(r.headers.get('content-type')).toBe(type)
      expect(r.headers.get('content-disposition')).toStartWith(`${disposition}; filename="${doc.file_id}.`)
      expect(r.headers.get('content-security-policy')).toBe("default-src 'none'; sandbox")
      expect(r.headers.get('x-content-type-options')).toBe('nosniff')
      expect(r.headers.get('cache-control')).toBe('private, no-store')
      // the same bytes the customer reads
      expect(r.text).toBe((await c.get(`/upload/${doc.file_id}`)).text)
      const audit = lines.filter((l) => l.msg === 'kyc document file opened by staff')
      expect(audit.length).toBe(1)
      expect(audit[0]!.fields).toMatchObject({ document: doc.id, customer: c.me })
      expect(typeof audit[0]!.fields!.staff).toBe('number')
      // no content, no file name in the line
      expect(JSON.stringify(audit[0])).not.toContain(doc.file_id)
    }
  })

  test('404 for a missing document and for one of another brand; a dealer and the customer are refused', async () => {
    const doc = (await c.attach('identity', 'id_card', dateIn(t.ctx.clock.now(), 400))).json.document
    const missing = await file(doc.id + 1000, c.manager)
    expect([missing.status, missing.json.error]).toEqual([404, 'KYC_DOCUMENT_NOT_FOUND'])
    const beta = (
      await t.request('POST', '/manager/sign/in', {
        body: { login: 1, password: 'manager-pass-1' },
        host: 'beta.localhost',
      })
    ).json.__token as string
    const other = await file(doc.id, beta, 'beta.localhost')
    expect([other.status, other.json.error]).toEqual([404, 'KYC_DOCUMENT_NOT_FOUND'])
    const dealer = await file(doc.id, await t.staffToken(3, 'dealer-pass-1'))
    expect(dealer.status).toBeGreaterThanOrEqual(401)
    expect(dealer.status).toBeLessThanOrEqual(403)
    const customer = await file(doc.id, c.customer)
    expect(customer.status).toBeGreaterThanOrEqual(401)
    expect(customer.status).toBeLessThanOrEqual(403)
    expect((await file(doc.id, c.manager)).status).toBe(200)
  })

  test('the OpenAPI document describes the route: tag, params, the file media, its errors', async () => {
    const op = (await t.request('GET', '/swagger/json')).json.paths['/manager/kyc/documents/{id}/file'].get
    expect(op.tags).toEqual(['KYC review'])
    expect(op.summary).toBeString()
    expect(op.description).toContain('logged')
    expect(op.parameters.map((p: any) => p.name)).toContain('id')
    expect(Object.keys(op.responses['200'].content)).toEqual(
      expect.arrayContaining(['image/png', 'application/pdf']),
    )
    expect(op.responses['404']).toBeDefined()
  })
})

describe('the profile status follows the settings (finding 6)', () => {
  let t: TestApp
  let c: Awaited<ReturnType<typeof client>>
  let defaults: any
  beforeAll(async () => {
    t = await makeTestApp()
    c = await client(t)
    defaults = (await c.get('/manager/kyc/settings', c.manager)).json
  })
  afterAll(() => t.close())

  test('a step made optional approves, once the job ran after the save, a profile whose other steps are approved (kyc.approved once)', async () => {
    await c.submitAll(['personal', 'identity', 'address'])
    expect((await c.get('/customer/kyc')).json.status).toBe('submitted')
    expect(await c.approvedEvents()).toBe(0)
    const settings = structuredClone(defaults)
    settings.steps[3].required = false
    expect((await c.put('/manager/kyc/settings', settings)).status).toBe(200)
    // the list is read before any profile is: the job recomputed it (out of the save's request)
    await t.runJob('kyc.recompute')
    const listed = (await c.get('/manager/kyc/profiles?status=approved', c.manager)).json.rows
    expect(listed.map((r: any) => r.customer_id)).toEqual([c.me])
    expect(await c.approvedEvents()).toBe(1)
    expect((await c.get('/customer/kyc')).json.status).toBe('approved')
    expect((await c.get(`/manager/kyc/profiles/${c.me}`, c.manager)).json.status).toBe('approved')
    // a required step added back: no longer approved, and reading it again emits nothing more
    expect((await c.put('/manager/kyc/settings', defaults)).status).toBe(200)
    expect((await c.get('/customer/kyc')).json.status).toBe('submitted')
    expect(await c.approvedEvents()).toBe(1)
  })

  test('settings stored without the recompute (another instance stopped halfway) are put right on read', async () => {
    const settings = structuredClone(defaults)
    settings.steps[3].required = false
    const [profile] = await t.ctx.db.select().from(kycProfiles).where(eq(kycProfiles.customerId, c.me))
    const brandId = profile!.brandId
    // as a save that stored the settings and stopped before the profiles
    await t.ctx.db
      .update(kycSettings)
      .set({ settings: JSON.stringify(settings) })
      .where(eq(kycSettings.brandId, brandId))
    const stored = async () =>
      (
        await t.ctx.db
          .select({ status: kycProfiles.status })
          .from(kycProfiles)
          .where(and(eq(kycProfiles.brandId, brandId), eq(kycProfiles.customerId, c.me)))
      )[0]!.status
    expect(await stored()).toBe('submitted')
    expect((await c.get('/customer/kyc')).json.status).toBe('approved')
    expect(await stored()).toBe('approved')
    // a second approval of the same customer: the event is emitted on each move into approved
    expect(await c.approvedEvents()).toBe(2)
    expect((await c.get('/customer/kyc')).json.status).toBe('approved')
    expect(await c.approvedEvents()).toBe(2)
  })
})
