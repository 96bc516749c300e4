// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
// Affiliate findings of the second hostile probe: a chargeback within the hold after its month closed kept
// the tier that month paid (customers and net-deposit tiers); a suspended recruiter kept the override of a
// CPA charged back within the hold; plan terms took keys that are not currencies and unknown nested fields;
// a plan revision by a clock behind was dated before the version it follows; the cabinet ignored from/to
// with another range; a statement with a negative net could be paid.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq, sql } from 'drizzle-orm'
import { ManualClock } from '../../src/kernel/clock'
import { type AffiliatePeriod, closeRows } from '../../src/modules/affiliate/domain/periods'
import type { PlanTerms } from '../../src/modules/affiliate/domain/plans'
import { commissions, planVersions, statements } from '../../src/modules/affiliate/schema'
import { CashierCredited, CashierReversed } from '../../src/modules/cashier'
import { affiliateEvents, affiliatePartners } from '../support/affiliate-facts'
import { makeTestApp, type TestApp } from '../support/app'
import { DEMO_AFFILIATE_HOST } from '../support/server'

const T0 = Date.UTC(2026, 9, 2, 9) // 2026-10-02
const clock = new ManualClock(T0)
let t: TestApp
const { emitAt, money, trade } = affiliateEvents(() => t, clock)

beforeAll(async () => {
  t = await makeTestApp({ clock })
})
afterAll(() => t.close())

const { asStaff, partner, referred, rowsOf, sum, close } = affiliatePartners(() => t, clock, 'probe2-fix', T0)

async function previewTotal(affiliateId: number, terms: Record<string, unknown>, from: string, to: string) {
  const r = await asStaff('POST', '/manager/affiliate-plans/preview', {
    affiliate_id: affiliateId,
    terms,
    from,
    to,
  })
  expect(r.status).toBe(200)
  return r.json.totals.find((x: { currency: string }) => x.currency === 'USD')?.amount_minor ?? 0
}

// One brand, one timeline: each test closes the months after those of the test before it.
describe('a chargeback within the hold after its month closed moves the tier that month paid', () => {
  const FAKE = {
    type: 'tiered_revshare',
    revshare_bp: 1000,
    tiers: [{ from: 3, bp: 5000 }],
    tier_metric: 'customers',
    revshare_basis: 'trading_revenue',
    // 60 days: October is priced again at the November and the December closes
    hold_days: 60,
    sub_affiliate_bp: 0,
  }
  let fake: { id: number }

  test('customers tier: first deposits charged back in November undo the tier October paid, once', async () => {
    fake = await partner('pfake', FAKE)
    const real = await referred('pfake')
    await emitAt(Date.UTC(2026, 9, 6), CashierCredited, money(real, 910_000, 100_000))
    await trade(real, 910_500, Date.UTC(2026, 9, 7), -10_000, 0, 100) // 100.00 of revenue: 10.00 at 10 %
    const fakes = [await referred('pfake'), await referred('pfake')]
    for (const [i, f] of fakes.entries())
      await emitAt(Date.UTC(2026, 9, 29), CashierCredited, money(f, 910_100 + i, 100_000))
    await close('2026-10', Date.UTC(2026, 10, 2))
    // three first deposits stood at the close: 50 % of 100.00 less the 10.00 paid
    expect(
      (await rowsOf(fake.id)).filter((r) => r.kind === 'tier_adjustment').map((r) => r.amountMinor),
    ).toEqual([4_000])
    for (const [i, f] of fakes.entries())
      await emitAt(Date.UTC(2026, 10, 10), CashierReversed, {
        ...money(f, 910_100 + i, 100_000),
        status: 'chargeback',
      })
    await close('2026-11', Date.UTC(2026, 11, 2))
    const rows = await rowsOf(fake.id)
    const correction = rows.filter((r) => r.kind === 'tier_adjustment' && r.period === '2026-11')
    // October's tier as known now (one customer: the base rate) less what it was paid, naming October
    expect(correction.map((r) => [r.amountMinor, r.corrects, r.rateBp])).toEqual([[-4_000, '2026-10', 1000]])
    expect(correction[0]!.key).toStartWith('tier:2026-10:')
    expect(sum(rows)).toBe(1_000)
    clock.set(Date.UTC(2026, 11, 3))
    expect(await previewTotal(fake.id, FAKE, '2026-10-01', '2026-11-30')).toBe(sum(rows))
    // the close is once: a second one is refused and writes nothing
    const again = await asStaff('POST', '/manager/affiliate-periods/2026-11/close')
    expect(again.status).toBe(409)
    expect(await rowsOf(fake.id)).toHaveLength(rows.length)
  })

  const NET = {
    type: 'tiered_revshare',
    revshare_bp: 1000,
    tiers: [{ from: 1, bp: 3000 }],
    tier_metric: 'customers',
    revshare_basis: 'net_deposits',
    hold_days: 30,
    sub_affiliate_bp: 0,
  }

  test("net-deposit tier: a chargeback 16 days later takes back the tier share too, not the next month's", async () => {
    const before = await rowsOf(fake.id)
    const p = await partner('pnet', NET)
    const a = await referred('pnet')
    const b = await referred('pnet')
    await emitAt(Date.UTC(2026, 11, 20), CashierCredited, money(a, 920_000, 100_000))
    await close('2026-12', Date.UTC(2027, 0, 2))
    // 10 % of 1,000.00 as the deposit came, the month's tier at the close: 30 % in all
    expect(sum(await rowsOf(p.id))).toBe(30_000)
    // charged back within the hold in January, when another customer's first deposit makes January's tier
    await emitAt(Date.UTC(2027, 0, 5), CashierReversed, {
      ...money(a, 920_000, 100_000),
      status: 'chargeback',
    })
    await emitAt(Date.UTC(2027, 0, 10), CashierCredited, money(b, 920_100, 100_000))
    await close('2027-01', Date.UTC(2027, 1, 2))
    const rows = await rowsOf(p.id)
    const jan = rows.filter((r) => r.period === '2027-01')
    // December priced again: no customer stood, nothing of its basis is left: its 200.00 tier comes back
    expect(
      jan.filter((r) => r.kind === 'tier_adjustment' && r.corrects === '2026-12').map((r) => r.amountMinor),
    ).toEqual([-20_000])
    // January's own tier is on January's deposit: the chargeback of December's counts against December
    expect(
      jan.filter((r) => r.kind === 'tier_adjustment' && r.corrects === '').map((r) => r.amountMinor),
    ).toEqual([20_000])
    // only b's 1,000.00 stands: 30 % of it
    expect(sum(rows)).toBe(30_000)
    clock.set(Date.UTC(2027, 1, 3))
    expect(await previewTotal(p.id, NET, '2026-12-01', '2027-01-31')).toBe(30_000)
    // October (60 days of hold) was priced again at the December close: nothing had changed, nothing written
    expect(await rowsOf(fake.id)).toEqual(before)
  })

  test('a statement whose net is negative is owed, not paid', async () => {
    const [s] = await t.ctx.db.select().from(statements).where(eq(statements.affiliateId, fake.id))
    const november = (
      await t.ctx.db.select().from(statements).where(eq(statements.affiliateId, fake.id))
    ).find((x) => x.period === '2026-11')
    expect(s).toBeDefined()
    expect(JSON.parse(november!.totals)).toEqual([{ currency: 'USD', amount_minor: -4_000, rows: 1 }])
    expect((await asStaff('POST', `/manager/affiliate-statements/${november!.id}/approve`)).status).toBe(200)
    const pay = await asStaff('POST', `/manager/affiliate-statements/${november!.id}/pay`, {
      reference: 'W-1',
    })
    expect([pay.status, pay.json.error]).toEqual([409, 'STATEMENT_NEGATIVE'])
    expect(pay.json.message).toContain('USD')
    const [after] = await t.ctx.db.select().from(statements).where(eq(statements.id, november!.id))
    expect(after!.status).toBe('approved')
    // October's positive statement is paid as before
    const october = (
      await t.ctx.db.select().from(statements).where(eq(statements.affiliateId, fake.id))
    ).find((x) => x.period === '2026-10')!
    expect((await asStaff('POST', `/manager/affiliate-statements/${october.id}/approve`)).status).toBe(200)
    expect(
      (await asStaff('POST', `/manager/affiliate-statements/${october.id}/pay`, { reference: 'W-2' })).status,
    ).toBe(200)
  })
})

describe('sub-affiliate overrides', () => {
  test("a suspended recruiter gives back the override of its recruit's CPA charged back within the hold", async () => {
    const at = Date.UTC(2027, 1, 3)
    const boss = await partner(
      'pboss',
      { type: 'revshare', revshare_bp: 0, hold_days: 0, sub_affiliate_bp: 1000 },
      at,
    )
    const cpa = { type: 'cpa', cpa: { USD: 20_000 }, hold_days: 30, sub_affiliate_bp: 0 }
    const recruit = await partner('precruit', cpa, at)
    const late = await partner('plate', cpa, at)
    for (const r of [recruit, late])
      expect(
        (await asStaff('PUT', `/manager/affiliates/${r.id}/recruiter`, { recruiter_id: boss.id })).status,
      ).toBe(200)
    const c = await referred('precruit', at)
    const d = await referred('plate', at)
    await emitAt(Date.UTC(2027, 1, 10), CashierCredited, money(c, 930_000, 100_000))
    await close('2027-02', Date.UTC(2027, 2, 2))
    expect((await rowsOf(boss.id)).map((r) => [r.kind, r.amountMinor])).toEqual([['sub_affiliate', 2_000]])
    await emitAt(Date.UTC(2027, 2, 5), CashierReversed, {
      ...money(c, 930_000, 100_000),
      status: 'chargeback',
    })
    clock.set(Date.UTC(2027, 2, 20))
    expect((await asStaff('PATCH', `/manager/affiliates/${boss.id}`, { status: 'suspended' })).status).toBe(
      200,
    )
    // the other recruit earns a CPA while its recruiter is suspended: no override is paid on it ...
    await emitAt(Date.UTC(2027, 2, 25), CashierCredited, money(d, 930_100, 100_000))
    await close('2027-03', Date.UTC(2027, 3, 2))
    expect(sum(await rowsOf(recruit.id))).toBe(0)
    const march = (await rowsOf(boss.id)).filter((r) => r.period === '2027-03')
    // the take-back at the rate it was paid (10 %), naming the recruit
    expect(march.map((r) => [r.kind, r.amountMinor, r.sourceAffiliateId, r.rateBp])).toEqual([
      ['sub_affiliate', -2_000, recruit.id, 1000],
    ])
    expect(sum(await rowsOf(boss.id))).toBe(0)
    // ... so its chargeback takes back nothing from the recruiter: it holds no override of that recruit
    await emitAt(Date.UTC(2027, 3, 3), CashierReversed, {
      ...money(d, 930_100, 100_000),
      status: 'chargeback',
    })
    await close('2027-04', Date.UTC(2027, 4, 2))
    expect(sum(await rowsOf(late.id))).toBe(0)
    expect(sum(await rowsOf(boss.id))).toBe(0)
    expect((await rowsOf(boss.id)).filter((r) => r.period === '2027-04')).toEqual([])
  })
})

describe('plan terms', () => {
  const create = (name: string, terms: Record<string, unknown>) =>
    asStaff('POST', '/manager/affiliate-plans', { name, terms })

  test('a per-currency key that is not a currency code is refused naming the field', async () => {
    const cpa = await create('v-cpa', {
      type: 'cpa',
      cpa: { usd: 'twenty' },
      hold_days: 0,
      sub_affiliate_bp: 0,
    })
    expect([cpa.status, cpa.json.error]).toEqual([400, 'INVALID_DATA'])
    expect(cpa.json.message).toContain('terms.cpa')
    const min = await create('v-min', {
      type: 'qualified_cpa',
      cpa: { USD: 20_000 },
      qualify: { min_first_deposit: { usd: -5 } },
      hold_days: 0,
      sub_affiliate_bp: 0,
    })
    expect([min.status, min.json.error]).toEqual([400, 'INVALID_DATA'])
    expect(min.json.message).toContain('terms.qualify.min_first_deposit')
    const markup = await create('v-markup', {
      type: 'revshare',
      revshare_bp: 1000,
      markup_per_lot: { US: 5 },
      hold_days: 0,
      sub_affiliate_bp: 0,
    })
    expect([markup.status, markup.json.error]).toEqual([400, 'INVALID_DATA'])
  })

  test('an unknown field inside the terms is refused, not dropped', async () => {
    const typo = await create('v-typo', {
      type: 'hybrid',
      cpa: { USD: 20_000 },
      qualfy: { kyc_approved: true },
      revshare_bp: 2500,
      hold_days: 30,
      sub_affiliate_bp: 0,
    })
    expect([typo.status, typo.json.error]).toEqual([400, 'INVALID_DATA'])
    expect(typo.json.message).toContain('terms.qualfy')
    const nested = await create('v-nested', {
      type: 'qualified_cpa',
      cpa: { USD: 20_000 },
      qualify: { kyc_approved: true, min_deposit: { USD: 1 } },
      hold_days: 30,
      sub_affiliate_bp: 0,
    })
    expect([nested.status, nested.json.error]).toEqual([400, 'INVALID_DATA'])
    expect(nested.json.message).toContain('terms.qualify.min_deposit')
    // what the document shows still passes
    const ok = await create('v-ok', {
      type: 'hybrid',
      cpa: { USD: 20_000 },
      qualify: { min_first_deposit: { USD: 10_000 }, kyc_approved: true },
      revshare_bp: 2500,
      markup_per_lot: { USD: 500 },
      hold_days: 30,
      sub_affiliate_bp: 1000,
    })
    expect(ok.status).toBe(200)
  })

  test('a revision written by a clock behind the version it follows is still the one in effect', async () => {
    const at = Date.UTC(2027, 4, 3, 9)
    const terms = (bp: number) => ({ type: 'revshare', revshare_bp: bp, hold_days: 0, sub_affiliate_bp: 0 })
    const p = await partner('pversions', terms(1000), at)
    const c = await referred('pversions', at)
    clock.set(at + 3_600_000)
    expect(
      (await asStaff('PUT', `/manager/affiliate-plans/${p.planId}`, { terms: terms(2000) })).status,
    ).toBe(200)
    // another instance, 200 ms behind, revises right after
    clock.set(at + 3_600_000 - 200)
    const v3 = await asStaff('PUT', `/manager/affiliate-plans/${p.planId}`, { terms: terms(3000) })
    expect(v3.status).toBe(200)
    const [v2time, v3time] = [v3.json.versions[1].effective_time, v3.json.versions[0].effective_time]
    expect(v3time).toBeGreaterThanOrEqual(v2time)
    await trade(c, 940_001, at + 86_400_000, -10_000)
    await t.settle()
    const [row] = await t.ctx.db.select().from(commissions).where(eq(commissions.customerId, c.id))
    expect(row).toMatchObject({ planVersion: 3, rateBp: 3000, amountMinor: 3_000 })
  })
})

describe('cabinet ranges', () => {
  test('from or to sent with a range other than custom is refused naming it', async () => {
    const login = await t.request('POST', '/api/affiliate/login', {
      host: DEMO_AFFILIATE_HOST,
      headers: { origin: `http://${DEMO_AFFILIATE_HOST}` },
      body: { login: 'partner@example.com', password: 'partner-pass-1' },
    })
    expect(login.status).toBe(200)
    const cookie = /tcs_aff=([^;]+)/.exec(login.headers.get('set-cookie') ?? '')![1]
    const get = (query: string) =>
      t.request('GET', `/api/affiliate/${query}`, {
        host: DEMO_AFFILIATE_HOST,
        headers: { cookie: `tcs_aff=${cookie}` },
      })
    const both = await get('commissions?range=7d&from=yesterday&to=2026-99-99')
    expect([both.status, both.json.error]).toEqual([400, 'INVALID_DATA'])
    expect(both.json.message).toStartWith('from:')
    const to = await get('dashboard?range=mtd&to=2027-05-01')
    expect([to.status, to.json.error]).toEqual([400, 'INVALID_DATA'])
    expect(to.json.message).toStartWith('to:')
    expect((await get('dashboard?range=7d')).status).toBe(200)
    expect((await get('dashboard?range=custom&from=2027-04-01&to=2027-04-30')).status).toBe(200)
  })
})

describe('closeRows (pure)', () => {
  const tiered: PlanTerms = {
    type: 'tiered_revshare',
    revshare_bp: 1000,
    tiers: [{ from: 2, bp: 3000 }],
    tier_metric: 'customers',
    hold_days: 30,
    sub_affiliate_bp: 0,
  }
  const base = (over: Partial<AffiliatePeriod>): AffiliatePeriod => ({
    affiliateId: 1,
    parentId: null,
    plan: null,
    revshare: [],
    volume: 0,
    customers: 0,
    totals: new Map(),
    ...over,
  })

  test('a closed month priced again writes its difference once, naming it', () => {
    const group = { planId: 7, version: 1, terms: tiered, currency: 'USD', basis: 50_000, paid: 15_000 }
    // paid 30 % of 500.00 at its close; one customer stands now: 10 %
    const rows = closeRows('2026-11', [
      base({ reprice: [{ period: '2026-10', volume: 0, customers: 1, groups: [group] }] }),
    ])
    expect(rows.map((r) => [r.kind, r.key, r.amountMinor, r.corrects, r.rateBp])).toEqual([
      ['tier_adjustment', 'tier:2026-10:7.1:USD', -10_000, '2026-10', 1000],
    ])
    // once that correction is counted as paid, pricing it again writes nothing
    const again = closeRows('2026-12', [
      base({
        reprice: [{ period: '2026-10', volume: 0, customers: 1, groups: [{ ...group, paid: 5_000 }] }],
      }),
    ])
    expect(again).toEqual([])
  })

  test('a recruiter that pays no override takes back at the rate of the override it reverses, at most what it holds', () => {
    // the recruit's period is negative: a chargeback of what it earned in February
    const recruit = (total: number, reverses = '2027-02') =>
      base({
        affiliateId: 2,
        parentId: 1,
        totals: new Map([['USD', total]]),
        negatives: total < 0 ? [{ currency: 'USD', amount: total, reverses }] : [],
      })
    const boss = (held: number) =>
      base({
        affiliateId: 1,
        overrides: new Map([['sub:2:2027-02:USD', { planId: 3, version: 2, bp: 1000, held }]]),
      })
    const of = (rows: ReturnType<typeof closeRows>) =>
      rows.map((r) => [r.affiliateId, r.amountMinor, r.rateBp])
    expect(of(closeRows('2027-03', [recruit(-20_000), boss(2_000)]))).toEqual([[1, -2_000, 1000]])
    expect(of(closeRows('2027-03', [recruit(-20_000), boss(500)]))).toEqual([[1, -500, 1000]])
    expect(of(closeRows('2027-03', [recruit(-20_000), boss(0)]))).toEqual([])
    // a positive period earns it nothing new
    expect(of(closeRows('2027-03', [recruit(20_000), boss(2_000)]))).toEqual([])
    // a reversal of a period that paid it no override takes nothing back, whatever another one holds
    expect(of(closeRows('2027-03', [recruit(-20_000, '2027-01'), boss(2_000)]))).toEqual([])
    expect(of(closeRows('2027-03', [recruit(-20_000, '2027-03'), boss(2_000)]))).toEqual([])
  })
})

// Second review: the fixes of the fixes (one timeline still: these close the months after April 2027).
describe('second review', () => {
  test('plans stored before the strict terms still answer (list, one, revision)', async () => {
    const p = await asStaff('POST', '/manager/affiliate-plans', {
      name: 'legacy',
      terms: { type: 'cpa', cpa: { USD: 100 }, hold_days: 0, sub_affiliate_bp: 0 },
    })
    expect(p.status).toBe(200)
    // what the schema before accepted and stored as sent: a lowercase key, an unknown nested field
    await t.ctx.db
      .update(planVersions)
      .set({
        terms: JSON.stringify({
          type: 'cpa',
          cpa: { USD: 100, usd: 5 },
          qualify: { kyc_approved: true, min_deposit: { USD: 1 } },
          hold_days: 0,
          sub_affiliate_bp: 0,
        }),
      })
      .where(eq(planVersions.planId, p.json.id))
    const list = await asStaff('GET', '/manager/affiliate-plans')
    expect(list.status).toBe(200)
    const one = await asStaff('GET', `/manager/affiliate-plans/${p.json.id}`)
    expect(one.status).toBe(200)
    expect(one.json.terms.cpa).toMatchObject({ USD: 100 })
    clock.set(clock.now() + 1000)
    const rev = await asStaff('PUT', `/manager/affiliate-plans/${p.json.id}`, {
      terms: { type: 'cpa', cpa: { USD: 200 }, hold_days: 0, sub_affiliate_bp: 0 },
    })
    expect(rev.status).toBe(200)
    expect(rev.json.versions).toHaveLength(2)
    expect(rev.json.terms.cpa).toEqual({ USD: 200 })
    // what is sent is still strict
    const bad = await asStaff('PUT', `/manager/affiliate-plans/${p.json.id}`, {
      terms: { type: 'cpa', cpa: { usd: 200 }, hold_days: 0, sub_affiliate_bp: 0 },
    })
    expect([bad.status, bad.json.error]).toEqual([400, 'INVALID_DATA'])
  })

  const REV = {
    type: 'revshare',
    revshare_bp: 2500,
    revshare_basis: 'net_deposits',
    hold_days: 30,
    sub_affiliate_bp: 0,
  }

  test("a plan that is not tiered: the preview keeps a reversal in its own month, as the ledger's rounding", async () => {
    const at = Date.UTC(2027, 4, 5)
    const p = await partner('pround', REV, at)
    const a = await referred('pround', at)
    const b = await referred('pround', at)
    await emitAt(Date.UTC(2027, 4, 20), CashierCredited, money(a, 950_001, 10))
    await emitAt(Date.UTC(2027, 4, 21), CashierCredited, money(b, 950_002, 10))
    await close('2027-05', Date.UTC(2027, 5, 2))
    await emitAt(Date.UTC(2027, 5, 5), CashierReversed, { ...money(b, 950_002, 10), status: 'chargeback' })
    await close('2027-06', Date.UTC(2027, 6, 2))
    const rows = await rowsOf(p.id)
    // 25 % of 0.20 rounded once in May (0.05), of -0.10 in June (-0.02)
    expect(sum(rows)).toBe(3)
    clock.set(Date.UTC(2027, 6, 3))
    expect(await previewTotal(p.id, REV, '2027-05-01', '2027-06-30')).toBe(sum(rows))
  })

  test("a suspended recruiter's take-back is of the override the reversed earning paid, not of another", async () => {
    const at = Date.UTC(2027, 6, 3)
    const boss = await partner(
      'pboss2',
      { type: 'revshare', revshare_bp: 0, hold_days: 0, sub_affiliate_bp: 1000 },
      at,
    )
    const rec = await partner(
      'prec2',
      { type: 'cpa', cpa: { USD: 20_000 }, hold_days: 30, sub_affiliate_bp: 0 },
      at,
    )
    expect(
      (await asStaff('PUT', `/manager/affiliates/${rec.id}/recruiter`, { recruiter_id: boss.id })).status,
    ).toBe(200)
    const x = await referred('prec2', at)
    const y = await referred('prec2', at)
    await emitAt(Date.UTC(2027, 6, 10), CashierCredited, money(x, 960_001, 100_000))
    await close('2027-07', Date.UTC(2027, 7, 2))
    expect((await rowsOf(boss.id)).map((r) => [r.kind, r.amountMinor])).toEqual([['sub_affiliate', 2_000]])
    clock.set(Date.UTC(2027, 7, 3))
    expect((await asStaff('PATCH', `/manager/affiliates/${boss.id}`, { status: 'suspended' })).status).toBe(
      200,
    )
    // y's CPA is earned while the recruiter is suspended: no override is paid on it
    await emitAt(Date.UTC(2027, 7, 10), CashierCredited, money(y, 960_002, 100_000))
    await close('2027-08', Date.UTC(2027, 8, 2))
    expect(sum(await rowsOf(boss.id))).toBe(2_000)
    // so its chargeback takes nothing back: x's CPA, and the override paid on it, stand
    await emitAt(Date.UTC(2027, 8, 5), CashierReversed, {
      ...money(y, 960_002, 100_000),
      status: 'chargeback',
    })
    await close('2027-09', Date.UTC(2027, 9, 2))
    expect(sum(await rowsOf(rec.id))).toBe(20_000)
    expect((await rowsOf(boss.id)).filter((r) => r.period === '2027-09')).toEqual([])
    expect(sum(await rowsOf(boss.id))).toBe(2_000)
  })

  test('paying a negative statement that is not approved is out of order first', async () => {
    const negative = (await t.ctx.db.select().from(statements)).filter(
      (s) =>
        s.status === 'pending' &&
        (JSON.parse(s.totals) as { amount_minor: number }[]).some((x) => x.amount_minor < 0),
    )
    expect(negative.length).toBeGreaterThan(0)
    const pay = await asStaff('POST', `/manager/affiliate-statements/${negative[0]!.id}/pay`, {
      reference: 'W-3',
    })
    expect([pay.status, pay.json.error]).toEqual([409, 'STATEMENT_STATE'])
  })

  test('from and to without a range are a custom range', async () => {
    const login = await t.request('POST', '/api/affiliate/login', {
      host: DEMO_AFFILIATE_HOST,
      headers: { origin: `http://${DEMO_AFFILIATE_HOST}` },
      body: { login: 'partner@example.com', password: 'partner-pass-1' },
    })
    expect(login.status).toBe(200)
    const cookie = /tcs_aff=([^;]+)/.exec(login.headers.get('set-cookie') ?? '')![1]
    const get = (query: string) =>
      t.request('GET', `/api/affiliate/${query}`, {
        host: DEMO_AFFILIATE_HOST,
        headers: { cookie: `tcs_aff=${cookie}` },
      })
    expect((await get('dashboard?from=2027-04-01&to=2027-04-30')).status).toBe(200)
    const one = await get('dashboard?from=2027-04-01')
    expect([one.status, one.json.error]).toEqual([400, 'INVALID_DATA'])
    expect(one.json.message).toStartWith('to')
  })

  test('a close reads no closed month of a tiered plan when no affiliate on one has moved since', async () => {
    // the statements the close's transaction runs, with their arguments
    const client = t.ctx.db.client as unknown as { transaction: (...a: unknown[]) => Promise<unknown> }
    const begin = client.transaction
    const ran: { sql: string; args: unknown[] }[] = []
    const record = (stmt: unknown) => {
      const s = stmt as string | { sql: string; args?: unknown[] }
      ran.push(typeof s === 'string' ? { sql: s, args: [] } : { sql: s.sql, args: [...(s.args ?? [])] })
    }
    client.transaction = async function (this: unknown, ...a: unknown[]) {
      const ltx = (await begin.apply(this, a)) as {
        execute: (s: unknown) => Promise<unknown>
        batch?: (s: unknown[], ...r: unknown[]) => Promise<unknown>
      }
      const execute = ltx.execute.bind(ltx)
      ltx.execute = (s) => {
        record(s)
        return execute(s)
      }
      if (ltx.batch) {
        const batch = ltx.batch.bind(ltx)
        ltx.batch = (list, ...r) => {
          for (const s of list) record(s)
          return batch(list, ...r)
        }
      }
      return ltx
    }
    try {
      // August and September are within the hold of the brand's tiered plans (60 days), but no affiliate
      // on one has a row there, nor a reversal since: neither month's rows are summed again
      await close('2027-10', Date.UTC(2027, 10, 2))
    } finally {
      client.transaction = begin
    }
    expect(ran.some((r) => /insert into "affiliate_periods"/i.test(r.sql))).toBe(true)
    const summed = ran.filter(
      (r) =>
        /sum\(/i.test(r.sql) &&
        /"affiliate_commissions"/.test(r.sql) &&
        r.args.some((x) => x === '2027-08' || x === '2027-09'),
    )
    expect(summed.map((r) => r.sql)).toEqual([])
  })

  test('an assignment made by a clock behind the one it follows is still the one in effect', async () => {
    const at = Date.UTC(2027, 9, 3, 9)
    const terms = (bp: number) => ({ type: 'revshare', revshare_bp: bp, hold_days: 0, sub_affiliate_bp: 0 })
    const p = await partner('passign', terms(1000), at)
    const c = await referred('passign', at)
    const other = await asStaff('POST', '/manager/affiliate-plans', { name: 'passign-2', terms: terms(2000) })
    expect(other.status).toBe(200)
    // another instance, 200 ms behind, assigns right after
    clock.set(at - 200)
    expect(
      (await asStaff('PUT', `/manager/affiliates/${p.id}/plan`, { plan_id: other.json.id })).status,
    ).toBe(200)
    await trade(c, 960_101, at + 86_400_000, -10_000)
    await t.settle()
    const [row] = await t.ctx.db.select().from(commissions).where(eq(commissions.customerId, c.id))
    expect(row).toMatchObject({ planId: other.json.id, rateBp: 2000, amountMinor: 2_000 })
  })
})

// Third review: months closed by the release before the re-pricing (one timeline still: after October 2027).
describe('upgrading a deployment', () => {
  const OLD = {
    type: 'tiered_revshare',
    revshare_bp: 2500,
    tiers: [{ from: 1, bp: 3500 }],
    tier_metric: 'customers',
    revshare_basis: 'net_deposits',
    // 30 days: November's hold is over at the January close, December's is not
    hold_days: 30,
    sub_affiliate_bp: 0,
  }
  // what a close of the release before left: no marker (the column's default), its tiers as it priced them
  const closedBefore = (period: string) =>
    t.ctx.db.run(sql`update affiliate_periods set pricing = 0 where period = ${period}`)

  test('a month closed by the release before is kept as it was priced: its chargeback is not moved', async () => {
    const at = Date.UTC(2027, 10, 3)
    const p = await partner('pold', OLD, at)
    const a = await referred('pold', at)
    const b = await referred('pold', at)
    const c = await referred('pold', at)
    await emitAt(Date.UTC(2027, 10, 20), CashierCredited, money(a, 970_001, 100_000))
    await close('2027-11', Date.UTC(2027, 11, 2))
    await closedBefore('2027-11')
    // 25 % as the deposit came, 10 % more at the close: one customer stood
    expect(sum(await rowsOf(p.id))).toBe(35_000)
    // November's deposit charged back within the hold in December, when another customer's first deposit
    // makes December's tier
    await emitAt(Date.UTC(2027, 11, 5), CashierReversed, {
      ...money(a, 970_001, 100_000),
      status: 'chargeback',
    })
    await emitAt(Date.UTC(2027, 11, 10), CashierCredited, money(b, 970_002, 100_000))
    await close('2027-12', Date.UTC(2028, 0, 2))
    await closedBefore('2027-12')
    // the chargeback counts in December, as November's close (of the release before) had it: December's tier
    // is on a net basis of 0, and November is not priced again
    const december = (await rowsOf(p.id)).filter((r) => r.period === '2027-12')
    expect(december.filter((r) => r.kind === 'tier_adjustment')).toEqual([])
    expect(sum(december)).toBe(0)
    // after the upgrade: the affiliate's customers move again in January (a deposit charged back)
    await emitAt(Date.UTC(2028, 0, 3), CashierCredited, money(c, 970_003, 50_000))
    await emitAt(Date.UTC(2028, 0, 6), CashierReversed, {
      ...money(c, 970_003, 50_000),
      status: 'chargeback',
    })
    await close('2028-01', Date.UTC(2028, 1, 2))
    const rows = await rowsOf(p.id)
    // neither closed month is priced again: December's chargeback is not handed back (10 % of 1,000.00 more
    // while November's hold is over), nor taken from November
    expect(rows.filter((r) => r.kind === 'tier_adjustment' && r.corrects !== '')).toEqual([])
    expect(rows.filter((r) => r.period === '2028-01' && r.kind === 'tier_adjustment')).toEqual([])
    // b's 1,000.00 stands at December's 35 %
    expect(sum(rows)).toBe(35_000)
  })

  test('a close of this release marks its period as priced under the rule (pricing 2: by deposit month, joined months split)', async () => {
    const [row] = (await t.ctx.db.all(
      sql`select pricing from affiliate_periods where period = '2028-01'`,
    )) as { pricing: number }[]
    expect(Number(row!.pricing)).toBe(2)
  })
})
