// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
// Affiliate commissions (issue 44): plans paid from the events of registration, KYC, the cashier, trading
// and the ledger going through the real outbox and relay; a close writes statements once; a closed period
// never changes (corrections go to the next); approve and pay; a preview equals what the plan pays; the
// same history delivered out of order and twice gives the same rows.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { ManualClock } from '../../src/kernel/clock'
import { customers } from '../../src/modules/accounts/schema'
import {
  affiliateAccess,
  affiliates,
  commissions,
  referredCustomers,
  statements,
} from '../../src/modules/affiliate/schema'
import { reconcileCommissions } from '../../src/modules/affiliate/service/commission-ledger'
import { CashierCredited, CashierReversed, WithdrawalPaid } from '../../src/modules/cashier'
import { KycApproved } from '../../src/modules/kyc'
import { affiliateEvents } from '../support/affiliate-facts'
import { makeTestApp, type TestApp } from '../support/app'

const DAY = 86_400_000
const T0 = Date.UTC(2026, 9, 5, 9) // 2026-10-05
const clock = new ManualClock(T0)
let t: TestApp
let n = 0
let affiliateId = 0
let first: { id: number; login: number }

const HYBRID = {
  type: 'hybrid',
  cpa: { USD: 20_000 },
  qualify: { min_first_deposit: { USD: 10_000 }, kyc_approved: true },
  revshare_bp: 2500,
  revshare_basis: 'trading_revenue',
  markup_per_lot: { USD: 400 },
  hold_days: 30,
  sub_affiliate_bp: 1000,
}

async function referred(link = 'demo-spring') {
  clock.set(T0)
  const email = `comm-${++n}@example.com`
  const r = await t.request('POST', '/customer/register', {
    body: { email, password: 'comm-pass-1', name: 'Comm', attribution: { link, sub1: `s${n % 2}` } },
  })
  expect(r.status).toBe(200)
  const [c] = await t.ctx.db.select().from(customers).where(eq(customers.email, email))
  const a = await t.request('POST', '/manager/accounts', {
    token: await t.staffToken(),
    body: { group: 'real\\USD', password: 'comm-pass-1', customer_id: c.id },
  })
  expect(a.status).toBe(200)
  return { id: c.id, login: a.json.login as number }
}

/** A staff request with a session signed at the test clock's now (the clock jumps days between events). */
const asStaff = async (method: string, path: string, body?: unknown) =>
  t.request(method, path, { token: await t.staffToken(), ...(body === undefined ? {} : { body }) })

/** A partner `<name>@example.com` (code `<NAME>1`) with the link `<name>-link`, on a plan of its own. */
async function partnerOnPlan(name: string, plan: { name: string; terms: Record<string, unknown> }) {
  const partner = await asStaff('POST', '/manager/affiliates', {
    email: `${name}@example.com`,
    code: `${name.toUpperCase()}1`,
    password: `${name}-pass-1`,
  })
  const link = await asStaff('POST', '/manager/affiliate-links', {
    affiliate_id: partner.json.id,
    code: `${name}-link`,
  })
  const created = await asStaff('POST', '/manager/affiliate-plans', plan)
  await asStaff('PUT', `/manager/affiliates/${partner.json.id}/plan`, { plan_id: created.json.id })
  return { partner, link }
}

const { emitAt, money, trade, bonus } = affiliateEvents(() => t, clock)
const rowsOf = async (customerId: number) =>
  (await t.ctx.db.select().from(commissions).where(eq(commissions.customerId, customerId)))
    .map((r) => ({ key: r.key.replace(/^c\d+:/, ''), kind: r.kind, amount: r.amountMinor, period: r.period }))
    .sort((a, b) => a.key.localeCompare(b.key) || a.period.localeCompare(b.period))

/** One customer's history: deposit, KYC, two trades, a bonus. */
async function history(c: { id: number; login: number }, order: 'time' | 'shuffled') {
  const steps: [number, () => Promise<void>][] = [
    [T0 + DAY, () => emitAt(T0 + DAY, CashierCredited, money(c, 50_000 + c.id, 15_000))],
    [
      T0 + 2 * DAY,
      () => emitAt(T0 + 2 * DAY, KycApproved, { customer_id: c.id, status: 'approved', risk_level: 'low' }),
    ],
    [T0 + 3 * DAY, () => trade(c, 60_000 + c.id, T0 + 3 * DAY, -700, -100)],
    [T0 + 4 * DAY, () => trade(c, 61_000 + c.id, T0 + 4 * DAY, -300, 50, 50)],
    [T0 + 5 * DAY, () => bonus(c, 70_000 + c.id, T0 + 5 * DAY, 1_000)],
  ]
  if (order === 'time') for (const [, run] of steps) await run()
  else for (const [, run] of [...steps.reverse(), steps[1], steps[3]]) await run()
  await t.settle()
}

beforeAll(async () => {
  t = await makeTestApp({ clock })
  const list = await asStaff('GET', '/manager/affiliates')
  affiliateId = list.json.rows[0].id
  const plan = await t.request('POST', '/manager/affiliate-plans', {
    token: await t.staffToken(),
    body: { name: 'Hybrid 25', terms: HYBRID },
  })
  expect(plan.status).toBe(200)
  const assigned = await t.request('PUT', `/manager/affiliates/${affiliateId}/plan`, {
    token: await t.staffToken(),
    body: { plan_id: plan.json.id },
  })
  expect(assigned.json).toMatchObject({ affiliate_id: affiliateId, plan_id: plan.json.id })
})
afterAll(() => t.close())

describe('a hybrid plan', () => {
  let c: { id: number; login: number }

  test('pays the CPA once qualified and RevShare on revenue, less bonuses; each row names its facts and plan version', async () => {
    c = await referred()
    first = c
    await history(c, 'time')
    expect(await rowsOf(c.id)).toEqual([
      { key: 'cpa', kind: 'cpa', amount: 20_000, period: '2026-10' },
      { key: `rev:bonus:${70_000 + c.id}`, kind: 'revshare', amount: -250, period: '2026-10' },
      // (700 + 100 paid + 400 markup) x 25 %
      { key: `rev:trade:${60_000 + c.id}`, kind: 'revshare', amount: 300, period: '2026-10' },
      // (300 - 50 swap credited + 200 markup) x 25 %
      { key: `rev:trade:${61_000 + c.id}`, kind: 'revshare', amount: 112, period: '2026-10' },
    ])
    const list = await t.request('GET', `/manager/affiliate-commissions?customer_id=${c.id}`, {
      token: await t.staffToken(),
    })
    const cpa = list.json.rows.find((r: { kind: string }) => r.kind === 'cpa')
    expect(cpa).toMatchObject({ amount: 200, currency: 'USD', plan_version: 1, affiliate_id: affiliateId })
    expect(cpa.facts).toHaveLength(2) // the first deposit and the KYC approval
  })

  test('the same history out of order and twice gives the same rows', async () => {
    const other = await referred()
    await history(other, 'shuffled')
    const norm = (rows: Awaited<ReturnType<typeof rowsOf>>, id: number) =>
      rows.map((r) => ({ ...r, key: r.key.replace(String(id), '#') }))
    expect(norm(await rowsOf(other.id), other.id - 0)).toEqual(
      norm(
        (await rowsOf(c.id)).map((r) => ({
          ...r,
          key: r.key.replace(/\d+$/, (d) => String(Number(d) - c.id + other.id)),
        })),
        other.id,
      ),
    )
  })

  test('a chargeback within the hold reverses the CPA it caused', async () => {
    const d = await referred()
    await emitAt(T0 + DAY, CashierCredited, money(d, 80_000 + d.id, 12_000))
    await emitAt(T0 + DAY, KycApproved, { customer_id: d.id, status: 'approved', risk_level: 'low' })
    await emitAt(T0 + 10 * DAY, CashierReversed, { ...money(d, 80_000 + d.id, 12_000), status: 'chargeback' })
    await t.settle()
    expect((await rowsOf(d.id)).map((r) => [r.kind, r.amount])).toEqual([
      ['cpa', 20_000],
      ['cpa_reversal', -20_000],
    ])
  })

  test('a preview of the same terms on past data equals what the plan paid', async () => {
    const r = await t.request('POST', '/manager/affiliate-plans/preview', {
      token: await t.staffToken(),
      body: { affiliate_id: affiliateId, terms: HYBRID, from: '2026-10-01', to: '2026-10-31' },
    })
    expect(r.status).toBe(200)
    const paid = await t.ctx.db.select().from(commissions).where(eq(commissions.affiliateId, affiliateId))
    const total = paid.filter((x) => x.period === '2026-10').reduce((s, x) => s + x.amountMinor, 0)
    expect(r.json.totals).toEqual([{ currency: 'USD', amount_minor: total }])
    const half = await asStaff('POST', '/manager/affiliate-plans/preview', {
      affiliate_id: affiliateId,
      terms: { ...HYBRID, revshare_bp: 1250 },
      from: '2026-10-01',
      to: '2026-10-31',
    })
    expect(half.json.totals[0].amount_minor).toBeLessThan(total)
  })
})

describe('periods and statements', () => {
  test('a month closes once after it ends; its statement totals its rows; a closed period never changes', async () => {
    const early = await asStaff('POST', '/manager/affiliate-periods/2026-10/close')
    expect(early.status).toBe(409)
    expect(early.json.error).toBe('PERIOD_NOT_ENDED')
    clock.set(Date.UTC(2026, 10, 2))
    const [a, b] = await Promise.all([
      asStaff('POST', '/manager/affiliate-periods/2026-10/close'),
      asStaff('POST', '/manager/affiliate-periods/2026-10/close'),
    ])
    expect([a.status, b.status].sort()).toEqual([200, 409])
    expect((a.status === 409 ? a : b).json.error).toBe('PERIOD_CLOSED')
    const list = await asStaff('GET', '/manager/affiliate-statements?period=2026-10')
    const mine = list.json.rows.find((s: { affiliate_id: number }) => s.affiliate_id === affiliateId)
    const rows = await t.ctx.db.select().from(commissions).where(eq(commissions.affiliateId, affiliateId))
    const inPeriod = rows.filter((r) => r.period === '2026-10')
    expect(mine).toMatchObject({ status: 'pending', rows: inPeriod.length })
    expect(mine.totals).toEqual([
      {
        currency: 'USD',
        amount_minor: inPeriod.reduce((s, r) => s + r.amountMinor, 0),
        amount: inPeriod.reduce((s, r) => s + r.amountMinor, 0) / 100,
        rows: inPeriod.length,
      },
    ])
    const detail = await t.request('GET', `/manager/affiliate-statements/${mine.id}`, {
      token: await t.staffToken(),
    })
    expect(detail.json.rows.map((r: { id: number }) => r.id).sort()).toEqual(inPeriod.map((r) => r.id).sort())

    // a late event of October: its row goes to November, naming the period it corrects
    await trade(first, 99_001, Date.UTC(2026, 9, 20), -1_000, 0)
    clock.set(Date.UTC(2026, 10, 2))
    await t.settle()
    const after = await t.ctx.db.select().from(commissions).where(eq(commissions.affiliateId, affiliateId))
    expect(after.filter((r) => r.period === '2026-10').map((r) => [r.id, r.amountMinor])).toEqual(
      inPeriod.map((r) => [r.id, r.amountMinor]),
    )
    const late = after.find((r) => r.key.endsWith(':rev:trade:99001'))
    expect(late).toMatchObject({ period: '2026-11', amountMinor: 350 })
    const [again] = await t.ctx.db.select().from(statements).where(eq(statements.id, mine.id))
    expect(again.totals).toBe(
      JSON.stringify([{ currency: 'USD', amount_minor: mine.totals[0].amount_minor, rows: inPeriod.length }]),
    )
  })

  test('approve, then pay with a reference, each once', async () => {
    const list = await t.request('GET', `/manager/affiliate-statements?affiliate_id=${affiliateId}`, {
      token: await t.staffToken(),
    })
    const id = list.json.rows[0].id
    const early = await t.request('POST', `/manager/affiliate-statements/${id}/pay`, {
      token: await t.staffToken(),
      body: { reference: 'WIRE-1' },
    })
    expect(early.status).toBe(409)
    expect(early.json.error).toBe('STATEMENT_STATE')
    const ok = await t.request('POST', `/manager/affiliate-statements/${id}/approve`, {
      token: await t.staffToken(),
    })
    expect(ok.json).toMatchObject({ status: 'approved' })
    expect(
      (
        await t.request('POST', `/manager/affiliate-statements/${id}/approve`, {
          token: await t.staffToken(),
        })
      ).status,
    ).toBe(409)
    const paid = await t.request('POST', `/manager/affiliate-statements/${id}/pay`, {
      token: await t.staffToken(),
      body: { reference: 'WIRE-1' },
    })
    expect(paid.json).toMatchObject({ status: 'paid', payment_reference: 'WIRE-1' })
    expect(paid.json.paid_time).toBeGreaterThan(0)
  })
})

describe('a recruited affiliate on a tiered plan', () => {
  test("its month's tier pays the difference at the close; its recruiter earns its share of the whole", async () => {
    clock.set(Date.UTC(2026, 10, 3))
    const { partner: b, link } = await partnerOnPlan('recruit', {
      name: 'Tiered',
      terms: {
        type: 'tiered_revshare',
        revshare_bp: 2000,
        tier_metric: 'volume_lots',
        tiers: [{ from: 150, bp: 3000 }],
        hold_days: 0,
        sub_affiliate_bp: 0,
      },
    })
    expect(b.status).toBe(200)
    expect(link.status).toBe(200)
    expect(
      (await asStaff('PUT', `/manager/affiliates/${b.json.id}/recruiter`, { recruiter_id: affiliateId }))
        .json,
    ).toEqual({
      affiliate_id: b.json.id,
      recruiter_id: affiliateId,
    })
    expect(
      (await asStaff('PUT', `/manager/affiliates/${b.json.id}/recruiter`, { recruiter_id: b.json.id }))
        .status,
    ).toBe(400)
    const email = 'recruited-customer@example.com'
    await t.request('POST', '/customer/register', {
      body: { email, password: 'comm-pass-1', name: 'R', attribution: { link: 'recruit-link' } },
    })
    const [cust] = await t.ctx.db.select().from(customers).where(eq(customers.email, email))
    const acct = await asStaff('POST', '/manager/accounts', {
      group: 'real\\USD',
      password: 'comm-pass-1',
      customer_id: cust.id,
    })
    const c = { id: cust.id, login: acct.json.login as number }
    await trade(c, 91_001, Date.UTC(2026, 10, 4), -1_000, 0, 100)
    await trade(c, 91_002, Date.UTC(2026, 10, 5), -1_000, 0, 100)
    await t.settle()
    // each trade at the base rate: 20 % of 1,000
    expect((await rowsOf(c.id)).map((r) => r.amount)).toEqual([200, 200])
    clock.set(Date.UTC(2026, 11, 2))
    const closed = await asStaff('POST', '/manager/affiliate-periods/2026-11/close')
    expect(closed.status).toBe(200)
    const rows = await t.ctx.db.select().from(commissions).where(eq(commissions.period, '2026-11'))
    // 2 lots reach the 1.5-lot tier: 30 % of 2,000 less the 400 paid
    expect(rows.find((r) => r.kind === 'tier_adjustment')).toMatchObject({
      affiliateId: b.json.id,
      amountMinor: 200,
      rateBp: 3000,
    })
    expect(rows.find((r) => r.kind === 'sub_affiliate')).toMatchObject({
      affiliateId,
      sourceAffiliateId: b.json.id,
      amountMinor: 60, // 10 % of 600
    })
    const st = await asStaff('GET', '/manager/affiliate-statements?period=2026-11')
    const totals = Object.fromEntries(
      st.json.rows.map((s: { affiliate_id: number; totals: { amount_minor: number }[] }) => [
        s.affiliate_id,
        s.totals[0].amount_minor,
      ]),
    )
    expect(totals[b.json.id]).toBe(600)
    expect(totals[affiliateId]).toBe(
      rows.filter((r) => r.affiliateId === affiliateId).reduce((sum, r) => sum + r.amountMinor, 0),
    )
  })
})

describe('the integration API', () => {
  test('GET /api/affiliate/v1/commissions: scope commissions:read, the rows by cursor, a period, a kind', async () => {
    const issue = async (scopes: string[]) =>
      (
        await t.request('POST', `/manager/affiliates/${affiliateId}/tokens`, {
          token: await t.staffToken(),
          body: { scopes, expires_in_days: 30 },
        })
      ).json.token as string
    const api = (path: string, token: string) =>
      t.request('GET', path, { host: 'affiliates.localhost', token })
    const without = await api('/api/affiliate/v1/commissions', await issue(['transactions:read']))
    expect(without.status).toBe(403)
    expect(without.json.error).toBe('INSUFFICIENT_SCOPE')
    const token = await issue(['commissions:read'])
    const all = await t.ctx.db.select().from(commissions).where(eq(commissions.affiliateId, affiliateId))
    const seen: number[] = []
    let cursor: string | null = null
    do {
      const page = await api(
        `/api/affiliate/v1/commissions?page_size=3${cursor ? `&cursor=${cursor}` : ''}`,
        token,
      )
      expect(page.status).toBe(200)
      expect(page.json.rows.length).toBeLessThanOrEqual(3)
      seen.push(...page.json.rows.map((r: { id: number }) => r.id))
      cursor = page.json.next_cursor
    } while (cursor)
    expect(seen.sort((a, b) => a - b)).toEqual(all.map((r) => r.id).sort((a, b) => a - b))
    const oct = await api('/api/affiliate/v1/commissions?period=2026-10&kind=cpa', token)
    expect(oct.json.rows.map((r: { id: number }) => r.id).sort()).toEqual(
      all
        .filter((r) => r.period === '2026-10' && r.kind === 'cpa')
        .map((r) => r.id)
        .sort(),
    )
    expect(oct.json.rows[0]).toMatchObject({ kind: 'cpa', amount: 200, currency: 'USD', period: '2026-10' })
    expect((await api('/api/affiliate/v1/commissions?period=2026-1', token)).status).toBe(400)
    expect((await api('/api/affiliate/v1/commissions?kind=bribe', token)).status).toBe(400)
  })
})

describe('a trade reads only what it can change', () => {
  test('lots that qualify a CPA, out of order and after the window; a full re-derivation then changes nothing', async () => {
    clock.set(Date.UTC(2026, 11, 3))
    await partnerOnPlan('lots', {
      name: 'Lots CPA',
      terms: {
        type: 'hybrid',
        cpa: { USD: 5_000 },
        qualify: { min_centilots: 150, within_days: 7 },
        revshare_bp: 1000,
        hold_days: 0,
        sub_affiliate_bp: 0,
      },
    })
    const email = 'lots-customer@example.com'
    await t.request('POST', '/customer/register', {
      body: { email, password: 'comm-pass-1', name: 'L', attribution: { link: 'lots-link' } },
    })
    const [cust] = await t.ctx.db.select().from(customers).where(eq(customers.email, email))
    const acct = await asStaff('POST', '/manager/accounts', {
      group: 'real\\USD',
      password: 'comm-pass-1',
      customer_id: cust.id,
    })
    const c = { id: cust.id, login: acct.json.login as number }
    const D = Date.UTC(2026, 11, 4)
    await emitAt(D, CashierCredited, money(c, 95_001, 1_000))
    await trade(c, 95_103, D + 3 * DAY, -100, 0, 100) // reaches 1.5 lots only with the next one, which comes later
    await trade(c, 95_120, D + 20 * DAY, -100, 0, 500) // after the window: RevShare only
    await t.settle()
    expect((await rowsOf(c.id)).map((r) => r.kind)).toEqual(['revshare', 'revshare'])
    await trade(c, 95_102, D + 2 * DAY, -100, 0, 60) // late, inside the window: 0.6 + 1.0 lots at D + 3 days
    await t.settle()
    const rows = await t.ctx.db.select().from(commissions).where(eq(commissions.customerId, c.id))
    expect(rows.find((r) => r.kind === 'cpa')).toMatchObject({ amountMinor: 5_000, eventTime: D + 3 * DAY })
    const before = rows.map((r) => [r.id, r.key, r.amountMinor, r.eventTime, r.factIds]).sort()
    // the full path, as a deposit or KYC fact takes it, over every customer of this suite
    const every = await t.ctx.db.select().from(commissions)
    for (const r of await t.ctx.db.select().from(referredCustomers)) {
      const ref = {
        brandId: r.brandId,
        customerId: r.customerId,
        affiliateId: r.affiliateId,
        linkId: r.linkId,
        tracking: {},
      }
      await t.ctx.db.transaction((tx) => reconcileCommissions(t.ctx as never, tx, ref))
    }
    const after = await t.ctx.db.select().from(commissions)
    expect(after.map((r) => [r.id, r.amountMinor, r.eventTime, r.factIds, r.period])).toEqual(
      every.map((r) => [r.id, r.amountMinor, r.eventTime, r.factIds, r.period]),
    )
    expect(
      after
        .filter((r) => r.customerId === c.id)
        .map((r) => [r.id, r.key, r.amountMinor, r.eventTime, r.factIds])
        .sort(),
    ).toEqual(before)
  })
})

describe('one brand does not reach another', () => {
  test("a recruiter is the brand's own; another brand's affiliate has no plan here", async () => {
    const [beta] = await t.ctx.db.select().from(affiliates).where(eq(affiliates.code, 'BETAPARTNER'))
    expect((await asStaff('GET', `/manager/affiliates/${beta.id}/plan`)).status).toBe(404)
    expect(
      (await asStaff('PUT', `/manager/affiliates/${beta.id}/recruiter`, { recruiter_id: affiliateId }))
        .status,
    ).toBe(404)
    // granted access to Demo, it is recruited on Demo only: Beta's closes know nothing of it
    await asStaff('PUT', '/manager/affiliates/access/BETAPARTNER', {
      status: 'active',
      password: 'grant-pass-1',
    })
    expect(
      (await asStaff('PUT', `/manager/affiliates/${beta.id}/recruiter`, { recruiter_id: affiliateId }))
        .status,
    ).toBe(200)
    const rows = await t.ctx.db.select().from(affiliateAccess).where(eq(affiliateAccess.affiliateId, beta.id))
    expect(Object.fromEntries(rows.map((r) => [r.brandId, r.recruiterId]))).toEqual({
      1: affiliateId,
      [beta.brandId]: null,
    })
  })

  test('net deposits: a withdrawal paid takes its share off', async () => {
    await partnerOnPlan('net', {
      name: 'Net deposits 10',
      terms: {
        type: 'revshare',
        revshare_bp: 1000,
        revshare_basis: 'net_deposits',
        hold_days: 14,
        sub_affiliate_bp: 0,
      },
    })
    const email = 'net-customer@example.com'
    await t.request('POST', '/customer/register', {
      body: { email, password: 'comm-pass-1', name: 'N', attribution: { link: 'net-link' } },
    })
    const [cust] = await t.ctx.db.select().from(customers).where(eq(customers.email, email))
    const c = { id: cust.id, login: 0 }
    const at = clock.now() + DAY
    await emitAt(at, CashierCredited, money(c, 97_001, 50_000))
    await emitAt(at + DAY, WithdrawalPaid, money(c, 97_002, 20_000))
    await t.settle()
    expect((await rowsOf(c.id)).map((r) => [r.key, r.amount])).toEqual([
      ['rev:deposit:97001', 5_000],
      ['rev:withdrawal:97002', -2_000],
    ])
  })
})

describe('bad input loses nothing', () => {
  test('terms a type needs, a bad period, an unknown plan are refused naming the field', async () => {
    const r = await t.request('POST', '/manager/affiliate-plans', {
      token: await t.staffToken(),
      body: { name: 'Broken', terms: { type: 'cpa', hold_days: 30, sub_affiliate_bp: 0 } },
    })
    expect(r.status).toBe(400)
    expect(r.json.message).toMatch(/cpa/)
    const rate = await t.request('POST', '/manager/affiliate-plans', {
      token: await t.staffToken(),
      body: { name: 'Broken', terms: { ...HYBRID, revshare_bp: 10_001 } },
    })
    expect(rate.status).toBe(400)
    expect(rate.json.message).toMatch(/revshare_bp/)
    expect(
      (await asStaff('GET', '/manager/affiliate-plans')).json.rows.map((p: { name: string }) => p.name),
    ).not.toContain('Broken')
    const period = await asStaff('POST', '/manager/affiliate-periods/2026-13/close')
    expect(period.status).toBe(400)
    const plan = await t.request('PUT', `/manager/affiliates/${affiliateId}/plan`, {
      token: await t.staffToken(),
      body: { plan_id: 99_999 },
    })
    expect(plan.status).toBe(404)
    expect(plan.json.error).toBe('PLAN_NOT_FOUND')
  })
})
