// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
// Affiliate findings of the third hostile probe: a recruit moved to another recruiter (or to none) sent the
// take-back of an override to the new recruiter, not to the one paid; raising active_trader_lots rewrote an
// existing active trader row (and posted it again); GET /manager/affiliates/{id}/plan documented no 404.
// Review 3a: a recruiter paid that still paid an override gave back a reversal netted at today's rate, with
// no cap and not recorded against the override it reversed.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { and, eq } from 'drizzle-orm'
import { ManualClock } from '../../src/kernel/clock'
import { customers } from '../../src/modules/accounts/schema'
import { deriveConversions, mayCorrect } from '../../src/modules/affiliate/domain/conversions'
import { type AffiliatePeriod, closeRows } from '../../src/modules/affiliate/domain/periods'
import { conversions, postbacks } from '../../src/modules/affiliate/schema'
import { CashierCredited, CashierReversed } from '../../src/modules/cashier'
import { TradeClosed } from '../../src/modules/trading'
import { affiliateEvents, affiliatePartners } from '../support/affiliate-facts'
import { makeTestApp, type TestApp } from '../support/app'
import { closedTrade } from '../support/events'

const T0 = Date.UTC(2026, 9, 2, 9) // 2026-10-02
const clock = new ManualClock(T0)
let t: TestApp
const { emitAt, money } = affiliateEvents(() => t, clock)

beforeAll(async () => {
  t = await makeTestApp({ clock, env: { AFFILIATE_POSTBACK_PRIVATE: 'true' } })
})
afterAll(() => t.close())

const { asStaff, partner, referred, rowsOf, sum, close } = affiliatePartners(() => t, clock, 'probe3-fix')

const setRecruiter = async (id: number, recruiter_id: number | null) =>
  expect((await asStaff('PUT', `/manager/affiliates/${id}/recruiter`, { recruiter_id })).status).toBe(200)

describe('OpenAPI', () => {
  test('GET /manager/affiliates/{id}/plan: its 404 code is documented', async () => {
    const doc = (await t.request('GET', '/swagger/json')).json
    const r = await asStaff('GET', '/manager/affiliates/999999/plan')
    expect(r.status).toBe(404)
    expect(r.json.error).toBe('AFFILIATE_NOT_FOUND')
    expect(JSON.stringify(doc.paths['/manager/affiliates/{id}/plan'].get.responses['404'] ?? {})).toContain(
      'AFFILIATE_NOT_FOUND',
    )
  })
})

describe('a recruit moved between the override and its take-back', () => {
  const BOSS = { type: 'revshare', revshare_bp: 0, hold_days: 0, sub_affiliate_bp: 1000 }
  const CPA = { type: 'cpa', cpa: { USD: 20_000 }, hold_days: 30, sub_affiliate_bp: 0 }

  test('recruit moved to another recruiter, then its CPA charged back within the hold: the recruiter paid gives it back, the new one owes nothing', async () => {
    const boss1 = await partner('rcbossa', BOSS, T0)
    const boss2 = await partner('rcbossb', BOSS, T0)
    const recruit = await partner('rcrecruit', CPA, T0)
    await setRecruiter(recruit.id, boss1.id)
    const c = await referred('rcrecruit', T0)
    await emitAt(Date.UTC(2026, 9, 20), CashierCredited, money(c, 840_000, 100_000))
    await close('2026-10', Date.UTC(2026, 10, 2))
    expect((await rowsOf(boss1.id)).map((r) => [r.kind, r.amountMinor])).toEqual([['sub_affiliate', 2_000]])

    // staff move the recruit to boss2; then the October deposit is charged back within the hold
    clock.set(Date.UTC(2026, 10, 3))
    await setRecruiter(recruit.id, boss2.id)
    await emitAt(Date.UTC(2026, 10, 5), CashierReversed, {
      ...money(c, 840_000, 100_000),
      status: 'chargeback',
    })
    await close('2026-11', Date.UTC(2026, 11, 2))

    expect(sum(await rowsOf(recruit.id))).toBe(0)
    // boss2 was never paid an override on October: it owes nothing for its reversal
    expect(await rowsOf(boss2.id)).toEqual([])
    // boss1 was paid 2,000 on a CPA that was charged back within the hold: it gives it back, naming October
    const b1 = await rowsOf(boss1.id)
    expect(sum(b1)).toBe(0)
    expect(
      b1
        .filter((r) => r.period === '2026-11')
        .map((r) => [r.kind, r.key, r.amountMinor, r.sourceAffiliateId, r.rateBp, r.corrects]),
    ).toEqual([['sub_affiliate', `sub:${recruit.id}:2026-10:USD`, -2_000, recruit.id, 1000, '2026-10']])
  }, 60_000)

  test('recruit detached from its recruiter (recruiter_id null), then its CPA charged back within the hold: the override is taken back', async () => {
    const boss = await partner('rcbossc', BOSS, Date.UTC(2026, 11, 3))
    const recruit = await partner('rcrecruit2', CPA, Date.UTC(2026, 11, 3))
    await setRecruiter(recruit.id, boss.id)
    const c = await referred('rcrecruit2', Date.UTC(2026, 11, 3))
    await emitAt(Date.UTC(2026, 11, 10), CashierCredited, money(c, 841_000, 100_000))
    await close('2026-12', Date.UTC(2027, 0, 2))
    expect(sum(await rowsOf(boss.id))).toBe(2_000)
    clock.set(Date.UTC(2027, 0, 3))
    await setRecruiter(recruit.id, null)
    await emitAt(Date.UTC(2027, 0, 5), CashierReversed, {
      ...money(c, 841_000, 100_000),
      status: 'chargeback',
    })
    await close('2027-01', Date.UTC(2027, 1, 2))
    expect(sum(await rowsOf(recruit.id))).toBe(0)
    expect(sum(await rowsOf(boss.id))).toBe(0)
  }, 60_000)

  test('a recruiter that still recruits it and pays an override earns on March without the reversal and gives back what February paid, naming February', async () => {
    const boss = await partner('rcbossd', BOSS, Date.UTC(2027, 1, 3))
    const recruit = await partner('rcrecruit3', CPA, Date.UTC(2027, 1, 3))
    await setRecruiter(recruit.id, boss.id)
    const c = await referred('rcrecruit3', Date.UTC(2027, 1, 3))
    const d = await referred('rcrecruit3', Date.UTC(2027, 1, 3))
    await emitAt(Date.UTC(2027, 1, 10), CashierCredited, money(c, 842_000, 100_000))
    await close('2027-02', Date.UTC(2027, 2, 2))
    expect(sum(await rowsOf(boss.id))).toBe(2_000)
    // March: the February CPA is charged back, another customer's CPA is earned
    await emitAt(Date.UTC(2027, 2, 5), CashierReversed, {
      ...money(c, 842_000, 100_000),
      status: 'chargeback',
    })
    await emitAt(Date.UTC(2027, 2, 6), CashierCredited, money(d, 842_001, 100_000))
    await close('2027-03', Date.UTC(2027, 3, 2))
    expect(sum(await rowsOf(recruit.id))).toBe(20_000)
    // review 3a: the take-back is recorded against February's override (what it still holds), not netted
    expect(
      (await rowsOf(boss.id))
        .filter((r) => r.period === '2027-03')
        .map((r) => [r.key, r.amountMinor, r.rateBp, r.corrects])
        .sort(),
    ).toEqual([
      [`sub:${recruit.id}:2027-02:USD`, -2_000, 1000, '2027-02'],
      [`sub:${recruit.id}:2027-03:USD`, 2_000, 1000, ''],
    ])
    expect(sum(await rowsOf(boss.id))).toBe(2_000)
  }, 60_000)
})

describe('closeRows (pure): take-backs go to the recruiter paid', () => {
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
  const paying = (affiliateId: number, bp = 1000) =>
    base({
      affiliateId,
      plan: {
        planId: 9,
        version: 1,
        terms: { type: 'revshare', revshare_bp: 0, hold_days: 0, sub_affiliate_bp: bp },
      } as AffiliatePeriod['plan'],
    })
  const of = (rows: ReturnType<typeof closeRows>) => rows.map((r) => [r.affiliateId, r.key, r.amountMinor])

  test('the new recruiter earns on the period without the reversal; the one paid gives back', () => {
    // recruit 2 earned 5,000 in March and reversed 20,000 of February, when recruiter 1 was paid 2,000 on it
    const recruit = base({
      affiliateId: 2,
      parentId: 3,
      totals: new Map([['USD', -15_000]]),
      negatives: [{ currency: 'USD', amount: -20_000, reverses: '2027-02' }],
    })
    const old = {
      ...paying(1),
      overrides: new Map([['sub:2:2027-02:USD', { planId: 4, version: 1, bp: 1000, held: 2_000 }]]),
    }
    expect(of(closeRows('2027-03', [recruit, old, paying(3)]))).toEqual([
      [1, 'sub:2:2027-02:USD', -2_000],
      [3, 'sub:2:2027-03:USD', 500],
    ])
    // the recruiter paid that still recruits it and pays: the same two rows, both its own (review 3a)
    const same = {
      ...paying(3),
      overrides: new Map([['sub:2:2027-02:USD', { planId: 4, version: 1, bp: 1000, held: 2_000 }]]),
    }
    expect(of(closeRows('2027-03', [recruit, same]))).toEqual([
      [3, 'sub:2:2027-02:USD', -2_000],
      [3, 'sub:2:2027-03:USD', 500],
    ])
  })
})

describe('review 3a: the take-back of an override is capped and at its rate, whatever the recruiter pays now', () => {
  // recruit 2's only March row reverses 20,000 of February, on which recruiter 3 was paid 100 (10%)
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
  const plan = (bp: number) =>
    ({
      planId: 9,
      version: 1,
      terms: { type: 'revshare', revshare_bp: 0, hold_days: 0, sub_affiliate_bp: bp },
    }) as AffiliatePeriod['plan']
  const takenFrom = (rows: ReturnType<typeof closeRows>, id: number) =>
    rows.filter((r) => r.affiliateId === id).reduce((s, r) => s + r.amountMinor, 0)
  const recruit = base({
    affiliateId: 2,
    parentId: 3,
    totals: new Map([['USD', -20_000]]),
    negatives: [{ currency: 'USD', amount: -20_000, reverses: '2027-02' }],
  })
  const held = new Map([['sub:2:2027-02:USD', { planId: 4, version: 1, bp: 1000, held: 100 }]])

  test('recruiter suspended now: gives back at most the 100 it holds', () => {
    expect(takenFrom(closeRows('2027-03', [recruit, base({ affiliateId: 3, overrides: held })]), 3)).toBe(
      -100,
    )
  })
  test('recruiter paying now (10%): never more than it holds either', () => {
    const rows = closeRows('2027-03', [recruit, base({ affiliateId: 3, plan: plan(1000), overrides: held })])
    expect(takenFrom(rows, 3)).toBeGreaterThanOrEqual(-100)
    // recorded against February's override (what it still holds for a later take-back)
    expect(rows.map((r) => [r.affiliateId, r.key, r.amountMinor, r.rateBp, r.corrects])).toEqual([
      [3, 'sub:2:2027-02:USD', -100, 1000, '2027-02'],
    ])
  })
  test('recruiter paying now at 50%: at the rate February paid (10%)', () => {
    expect(
      takenFrom(
        closeRows('2027-03', [recruit, base({ affiliateId: 3, plan: plan(5000), overrides: held })]),
        3,
      ),
    ).toBeGreaterThanOrEqual(-100)
  })
})

describe('active trader', () => {
  test('review 3a, left as is: a late trade before the row moves it as the threshold of today places it (the one it was made with is not stored)', () => {
    // threshold 1 lot, unchanged: T2 (1.2 lots) arrived first and made the row; T1 (1 lot) arrives late.
    // A replay in time order gives T1: the row moves there (ADR 0017)
    const facts = [
      {
        kind: 'trade',
        reference: 't2',
        valueMinor: 0,
        currency: 'USD',
        volume: 120,
        eventId: 2,
        eventTime: 2000,
      },
      {
        kind: 'trade',
        reference: 't1',
        valueMinor: 0,
        currency: 'USD',
        volume: 100,
        eventId: 9,
        eventTime: 1000,
      },
    ] as const
    const [derived] = deriveConversions(facts, { activeTraderCentilots: 100 })
    expect(derived).toMatchObject({ referenceId: 't1', valueMinor: 100 })
    expect(mayCorrect({ eventTime: 2000, eventId: 2 }, derived!, facts[1])).toBe(true)
    // the review's case (threshold 5 lots when T3's 5 lots made the row, 0 now, a late T0 of 0.1 lot) gives
    // mayCorrect the same kind of input: a stored row, a late trade before it, a row at that trade. The
    // stored row (T3, 500) and its facts are what threshold 5 lots and threshold 0 both make, so nothing
    // stored tells the two cases apart without a column for the threshold (a migration)
  })
  test('raising active_trader_lots later does not rewrite an existing active trader row (nor post it again)', async () => {
    const T1 = Date.UTC(2027, 4, 10, 9)
    clock.set(T1)
    expect((await asStaff('PUT', '/manager/affiliate-settings', { active_trader_lots: 0 })).status).toBe(200)
    const email = 'aff3-at@example.com'
    const r = await t.request('POST', '/customer/register', {
      body: { email, password: 'aff3-pass-1', name: 'A', attribution: { link: 'demo-spring' } },
    })
    expect(r.status).toBe(200)
    const [c] = await t.ctx.db.select().from(customers).where(eq(customers.email, email))
    const acct = await asStaff('POST', '/manager/accounts', {
      group: 'real\\USD',
      password: 'aff3-pass-1',
      customer_id: c!.id,
    })
    expect(acct.status).toBe(200)
    const login = acct.json.login as number
    // threshold 0: the first closed trade (0.5 lot) makes the customer an active trader
    await emitAt(T1 + 10_000, TradeClosed, closedTrade({ ticket: 88001, login, volume: 50, at: T1 + 10_000 }))
    await t.settle()
    const at = async () =>
      (
        await t.ctx.db
          .select()
          .from(conversions)
          .where(and(eq(conversions.customerId, c!.id), eq(conversions.key, 'active_trader')))
      )[0]
    const before = await at()
    expect(before).toMatchObject({ referenceId: '88001', valueMinor: 50 })
    // staff raise the threshold to 1 lot; the customer trades on and then deposits
    expect((await asStaff('PUT', '/manager/affiliate-settings', { active_trader_lots: 1 })).status).toBe(200)
    await emitAt(T1 + 20_000, TradeClosed, closedTrade({ ticket: 88002, login, volume: 60, at: T1 + 20_000 }))
    await t.settle()
    const pbBefore = (await t.ctx.db.select().from(postbacks).where(eq(postbacks.conversionId, before!.id)))
      .length
    await emitAt(T1 + 30_000, CashierCredited, money({ id: c!.id, login }, 88100, 10_000))
    await t.settle()
    const after = await at()
    await asStaff('PUT', '/manager/affiliate-settings', { active_trader_lots: 0 })
    // rule 1-2: the row keeps its first occurrence
    expect(after).toMatchObject({ referenceId: '88001', valueMinor: 50, eventTime: before!.eventTime })
    expect(
      (await t.ctx.db.select().from(postbacks).where(eq(postbacks.conversionId, before!.id))).length,
    ).toBe(pbBefore)
  }, 60_000)
})
