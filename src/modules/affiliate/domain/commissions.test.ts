// The commission rules (issue 44) as a pure function: examples of each plan type and, as a property, facts
// in any order and repeated derive the same rows.
import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { deriveCommissions, type FactRow } from './commissions'
import { closeRows } from './periods'
import { type AppliedPlan, type PlanTerms, share, termsProblem } from './plans'
import { earningSpans } from './standing'

const DAY = 86_400_000
const T0 = Date.UTC(2026, 9, 1)
let nextId = 1
const fact = (kind: FactRow['kind'], at: number, o: Partial<FactRow> = {}): FactRow => ({
  id: nextId++,
  kind,
  reference: String(nextId),
  valueMinor: null,
  currency: 'USD',
  volume: 0,
  eventId: nextId,
  eventTime: T0 + at,
  ...o,
})
const plan = (terms: Partial<PlanTerms>): AppliedPlan => ({
  planId: 7,
  version: 2,
  terms: { type: 'cpa', hold_days: 30, sub_affiliate_bp: 0, ...terms } as PlanTerms,
})
const derive = (facts: FactRow[], p: AppliedPlan | null) => deriveCommissions(42, facts, () => p)

describe('CPA', () => {
  const cpa = plan({
    type: 'qualified_cpa',
    cpa: { USD: 20_000 },
    qualify: { min_first_deposit: { USD: 10_000 } },
  })

  test('a qualified first deposit earns the CPA once, with the facts it derives from and the plan version', () => {
    const dep = fact('deposit', DAY, { reference: 'tx1', valueMinor: 15_000 })
    const later = fact('deposit', 2 * DAY, { reference: 'tx2', valueMinor: 90_000 })
    expect(derive([dep, later], cpa)).toEqual([
      {
        key: 'c42:cpa',
        kind: 'cpa',
        amountMinor: 20_000,
        currency: 'USD',
        basisMinor: 20_000,
        rateBp: 0,
        volume: 0,
        planId: 7,
        planVersion: 2,
        factIds: [dep.id],
        eventTime: dep.eventTime,
      },
    ])
  })

  test('below the minimum, in a currency the plan does not name, or without a plan: nothing', () => {
    expect(derive([fact('deposit', DAY, { valueMinor: 9_999 })], cpa)).toEqual([])
    expect(derive([fact('deposit', DAY, { valueMinor: 50_000, currency: 'EUR' })], cpa)).toEqual([])
    expect(derive([fact('deposit', DAY, { valueMinor: 50_000 })], null)).toEqual([])
  })

  test('KYC and lots within the days: dated when the last condition is met; lots too late never qualify', () => {
    const p = plan({
      type: 'qualified_cpa',
      cpa: { USD: 5_000 },
      qualify: { kyc_approved: true, min_centilots: 100, within_days: 7 },
    })
    const dep = fact('deposit', DAY, { valueMinor: 1 })
    const kyc = fact('kyc', 2 * DAY)
    const t1 = fact('trade', 3 * DAY, { volume: 60 })
    const t2 = fact('trade', 4 * DAY, { volume: 40 })
    const [r] = derive([dep, kyc, t1, t2], p)
    expect(r).toMatchObject({ kind: 'cpa', eventTime: t2.eventTime })
    expect(r.factIds).toEqual([dep.id, kyc.id, t1.id, t2.id])
    const late = fact('trade', 9 * DAY, { volume: 40 })
    expect(derive([dep, kyc, t1, late], p)).toEqual([])
    expect(derive([dep, t1, t2], p)).toEqual([])
  })

  test('a refund of the first deposit within the hold reverses the CPA; after it, nothing; before qualifying: no CPA', () => {
    const dep = fact('deposit', DAY, { reference: 'tx9', valueMinor: 20_000 })
    const inHold = fact('reversal', 10 * DAY, { reference: 'tx9', valueMinor: 20_000 })
    const rows = derive([dep, inHold], cpa)
    expect(rows.map((r) => [r.key, r.kind, r.amountMinor, r.eventTime])).toEqual([
      ['c42:cpa', 'cpa', 20_000, dep.eventTime],
      ['c42:cpa:reversed', 'cpa_reversal', -20_000, inHold.eventTime],
    ])
    const afterHold = fact('reversal', 40 * DAY, { reference: 'tx9', valueMinor: 20_000 })
    expect(derive([dep, afterHold], cpa).map((r) => r.kind)).toEqual(['cpa'])
    const kycPlan = plan({ type: 'qualified_cpa', cpa: { USD: 1 }, qualify: { kyc_approved: true } })
    expect(derive([dep, inHold, fact('kyc', 20 * DAY)], kycPlan)).toEqual([])
  })
})

describe('RevShare', () => {
  test('trading revenue: commission and swap paid plus markup per lot, less bonuses', () => {
    const p = plan({ type: 'revshare', revshare_bp: 2500, markup_per_lot: { USD: 400 } })
    const trade = fact('trade', DAY, { reference: '501', valueMinor: 700, volume: 150 })
    const bonus = fact('bonus', 2 * DAY, { reference: 'op1', valueMinor: 1_000 })
    const rows = derive([trade, bonus], p)
    expect(rows.map((r) => [r.key, r.basisMinor, r.amountMinor, r.volume])).toEqual([
      ['c42:rev:trade:501', 700 + 600, 325, 150],
      ['c42:rev:bonus:op1', -1_000, -250, 0],
    ])
  })

  test('a demo trade (no revenue) earns nothing; a ticket reported twice counts once', () => {
    const p = plan({ type: 'revshare', revshare_bp: 5000 })
    const demo = fact('trade', DAY, { reference: '1', valueMinor: null, currency: '' })
    const a = fact('trade', DAY, { reference: '2', valueMinor: 100 })
    const again = fact('trade', DAY + 5, { reference: '2', valueMinor: 100 })
    expect(derive([demo, a, again], p).map((r) => r.key)).toEqual(['c42:rev:trade:2'])
  })

  test('net deposits: a refund within the hold takes back the share of what it refunded', () => {
    const p = plan({ type: 'revshare', revshare_bp: 1000, revshare_basis: 'net_deposits', hold_days: 14 })
    const dep = fact('deposit', DAY, { reference: 'd1', valueMinor: 50_000 })
    const part = fact('reversal', 3 * DAY, { reference: 'd1', valueMinor: 20_000 })
    expect(derive([dep, part], p).map((r) => [r.kind, r.amountMinor])).toEqual([
      ['revshare', 5_000],
      ['revshare_reversal', -2_000],
    ])
  })

  test('hybrid pays both; each fact under the version in effect at its time', () => {
    const v1 = plan({ type: 'hybrid', cpa: { USD: 100 }, revshare_bp: 1000 })
    const v2: AppliedPlan = { ...v1, version: 3, terms: { ...v1.terms, revshare_bp: 2000 } }
    const dep = fact('deposit', DAY, { valueMinor: 1 })
    const early = fact('trade', 2 * DAY, { reference: 'a', valueMinor: 1_000 })
    const late = fact('trade', 20 * DAY, { reference: 'b', valueMinor: 1_000 })
    const rows = deriveCommissions(42, [dep, early, late], (time) => (time < T0 + 10 * DAY ? v1 : v2))
    expect(rows.map((r) => [r.kind, r.amountMinor, r.planVersion])).toEqual([
      ['cpa', 100, 2],
      ['revshare', 100, 2],
      ['revshare', 200, 3],
    ])
  })
})

describe('while the affiliate does not earn', () => {
  const hybrid = plan({
    type: 'hybrid',
    cpa: { USD: 20_000 },
    revshare_bp: 5000,
    revshare_basis: 'trading_revenue',
  })
  // suspended from day 2 to day 4
  const earns = (time: number) => time < T0 + 2 * DAY || time >= T0 + 4 * DAY
  const of = (facts: FactRow[]) =>
    deriveCommissions(42, facts, () => hybrid, earns).map((r) => [r.key.replace('c42:', ''), r.amountMinor])

  test('what adds is left out and what takes back is kept; a CPA qualifies only while it earns', () => {
    const dep = fact('deposit', 3 * DAY, { reference: 'd1', valueMinor: 50_000 })
    const before = fact('trade', DAY, { reference: 't1', valueMinor: 1_000, volume: 100 })
    const during = fact('trade', 3 * DAY, { reference: 't2', valueMinor: 1_000, volume: 100 })
    const swap = fact('trade', 3 * DAY, { reference: 't3', valueMinor: -400, volume: 100 })
    const gift = fact('bonus', 3 * DAY, { reference: 'b1', valueMinor: 600 })
    const after = fact('trade', 5 * DAY, { reference: 't4', valueMinor: 200, volume: 100 })
    expect(of([dep, before, during, swap, gift, after])).toEqual([
      ['rev:trade:t1', 500],
      ['rev:trade:t3', -200],
      ['rev:bonus:b1', -300],
      ['rev:trade:t4', 100],
    ])
  })
})

describe('earning spans', () => {
  test('the spans of a month in which it earns, its status and its access together', () => {
    const s = {
      status: [
        { from: 10, active: false },
        { from: 20, active: true },
      ],
      access: [
        { from: 15, active: false },
        { from: 30, active: true },
      ],
    }
    expect(earningSpans(s, 0, 100)).toEqual([
      [0, 10],
      [30, 100],
    ])
    expect(earningSpans(s, 12, 25)).toEqual([])
    expect(earningSpans({ status: [], access: [] }, 5, 9)).toEqual([[5, 9]])
  })
})

describe('a close', () => {
  const tiered = plan({
    type: 'tiered_revshare',
    revshare_bp: 2000,
    tier_metric: 'volume_lots',
    tiers: [
      { from: 10_000, bp: 3000 },
      { from: 50_000, bp: 4000 },
    ],
    sub_affiliate_bp: 1000,
  })
  const paidAtBase = {
    planId: 7,
    version: 2,
    terms: tiered.terms,
    currency: 'USD',
    basis: 100_000,
    paid: 20_000,
  }
  const base = {
    parentId: null,
    revshare: [paidAtBase],
    customers: 0,
    totals: new Map([['USD', 20_000]]),
  }

  test("the month's tier pays its rate less what the rows paid; the recruiter gets its share of the whole", () => {
    const rows = closeRows('2026-10', [
      { ...base, affiliateId: 1, plan: tiered, volume: 12_000, parentId: 2 },
      { ...base, affiliateId: 2, plan: tiered, volume: 0, revshare: [], totals: new Map() },
    ])
    expect(rows.map((r) => [r.affiliateId, r.kind, r.key, r.amountMinor, r.rateBp])).toEqual([
      [1, 'tier_adjustment', 'tier:2026-10:7.2:USD', 10_000, 3000],
      [2, 'sub_affiliate', 'sub:1:2026-10:USD', 3_000, 1000],
    ])
  })

  test('below the first tier: no adjustment', () => {
    expect(closeRows('2026-10', [{ ...base, affiliateId: 1, plan: tiered, volume: 9_999 }])).toEqual([])
  })
})

describe('findings of the review', () => {
  test('a tiered plan at a base rate of 0 keeps each row with its basis, and the close pays the tier on it', () => {
    const p = plan({
      type: 'tiered_revshare',
      revshare_bp: 0,
      tier_metric: 'volume_lots',
      tiers: [{ from: 1_000, bp: 3000 }],
    })
    const rows = derive(
      Array.from({ length: 20 }, (_, i) =>
        fact('trade', DAY + i, { reference: `t${i}`, valueMinor: 1_000, volume: 100 }),
      ),
      p,
    )
    expect(rows).toHaveLength(20)
    expect(rows.every((r) => r.amountMinor === 0 && r.basisMinor === 1_000)).toBe(true)
    const added = closeRows('2026-10', [
      {
        affiliateId: 1,
        parentId: null,
        plan: p,
        revshare: [{ planId: 7, version: 2, terms: p.terms, currency: 'USD', basis: 20_000, paid: 0 }],
        volume: 2_000,
        customers: 0,
        totals: new Map([['USD', 0]]),
      },
    ])
    expect(added.map((r) => r.amountMinor)).toEqual([6_000])
  })

  test('below the first tier no rounding residue is written; a revision mid-month keeps each version at its own tiers', () => {
    const v1 = plan({
      type: 'tiered_revshare',
      revshare_bp: 2500,
      tier_metric: 'volume_lots',
      tiers: [{ from: 100, bp: 3000 }],
    })
    const v2: AppliedPlan = {
      ...v1,
      version: 3,
      terms: { ...v1.terms, revshare_bp: 2000, tiers: [{ from: 10_000, bp: 2500 }] },
    }
    const group = (p: AppliedPlan, basis: number, paid: number) => ({
      planId: p.planId,
      version: p.version,
      terms: p.terms,
      currency: 'USD',
      basis,
      paid,
    })
    const rows = closeRows('2026-10', [
      {
        affiliateId: 1,
        parentId: null,
        plan: v2,
        // three trades of 3 minor at 25 %: 0 each, and 2,000 paid at v2's 20 %
        revshare: [group(v1, 9, 0), group(v2, 10_000, 2_000)],
        volume: 500,
        customers: 0,
        totals: new Map([['USD', 2_000]]),
      },
    ])
    // v1's tier (1 lot) is reached: 30 % of 9 less 0; v2's (100 lots) is not: nothing, no residue
    expect(rows.map((r) => [r.key, r.amountMinor])).toEqual([['tier:2026-10:7.2:USD', 2]])
  })

  test('lots on a demo account qualify nothing', () => {
    const p = plan({
      type: 'qualified_cpa',
      cpa: { USD: 100 },
      qualify: { min_centilots: 100, within_days: 7 },
    })
    const dep = fact('deposit', DAY, { valueMinor: 1_000 })
    expect(derive([dep, fact('trade', 2 * DAY, { volume: 500, valueMinor: null, currency: '' })], p)).toEqual(
      [],
    )
    expect(
      derive([dep, fact('trade', 2 * DAY, { volume: 500, valueMinor: 10 })], p).map((r) => r.kind),
    ).toEqual(['cpa'])
  })

  test('a partial refund that leaves the minimum keeps the CPA; a refund after the hold but before qualifying voids it', () => {
    const p = plan({
      type: 'qualified_cpa',
      cpa: { USD: 100 },
      qualify: { min_first_deposit: { USD: 10_000 }, kyc_approved: true },
    })
    const dep = fact('deposit', DAY, { reference: 'x', valueMinor: 50_000 })
    const kyc = fact('kyc', 2 * DAY)
    const part = fact('reversal', 3 * DAY, { reference: 'x', valueMinor: 30_000 })
    expect(derive([dep, kyc, part], p).map((r) => r.kind)).toEqual(['cpa'])
    const most = fact('reversal', 3 * DAY, { reference: 'x', valueMinor: 45_000 })
    expect(derive([dep, kyc, most], p).map((r) => r.kind)).toEqual(['cpa', 'cpa_reversal'])
    const late = fact('reversal', 40 * DAY, { reference: 'x', valueMinor: 50_000 })
    expect(derive([dep, late, fact('kyc', 50 * DAY)], p)).toEqual([])
  })

  test('net deposits take withdrawals off; a bonus reported twice counts once', () => {
    const p = plan({ type: 'revshare', revshare_bp: 1000, revshare_basis: 'net_deposits' })
    const rows = derive(
      [
        fact('deposit', DAY, { reference: 'd', valueMinor: 50_000 }),
        fact('withdrawal', 2 * DAY, { reference: 'w', valueMinor: 20_000 }),
      ],
      p,
    )
    expect(rows.map((r) => [r.key, r.amountMinor])).toEqual([
      ['c42:rev:deposit:d', 5_000],
      ['c42:rev:withdrawal:w', -2_000],
    ])
    const t = plan({ type: 'revshare', revshare_bp: 1000 })
    const b1 = fact('bonus', DAY, { reference: 'op', valueMinor: 500 })
    const b2 = fact('bonus', DAY + 1, { reference: 'op', valueMinor: 500 })
    expect(derive([b1, b2], t).map((r) => r.key)).toEqual(['c42:rev:bonus:op'])
  })
})

test('a share rounds toward zero, so a reversal takes back exactly what was paid', () => {
  expect(share(333, 2500)).toBe(83)
  expect(share(-333, 2500)).toBe(-83)
  expect(share(9_000_000_000_000, 9999)).toBe(8_999_100_000_000)
})

test('terms a plan type needs are named in the refusal', () => {
  expect(termsProblem({ type: 'cpa', hold_days: 0, sub_affiliate_bp: 0 })).toMatch(/^cpa:/)
  expect(
    termsProblem({ type: 'tiered_revshare', revshare_bp: 1, hold_days: 0, sub_affiliate_bp: 0 }),
  ).toMatch(/^tiers:/)
})

test('property: facts in any order and repeated derive the same rows as once in time order', () => {
  const terms: AppliedPlan = plan({
    type: 'hybrid',
    cpa: { USD: 2_500 },
    qualify: { min_first_deposit: { USD: 1_000 }, kyc_approved: true, min_centilots: 50, within_days: 10 },
    revshare_bp: 3000,
    revshare_basis: 'trading_revenue',
    markup_per_lot: { USD: 200 },
    hold_days: 5,
  })
  const netDeposits: AppliedPlan = { ...terms, terms: { ...terms.terms, revshare_basis: 'net_deposits' } }
  const ev = fc.oneof(
    fc.record({ kind: fc.constant('kyc' as const), day: fc.integer({ min: 0, max: 30 }) }),
    fc.record({
      kind: fc.constantFrom('deposit' as const, 'reversal' as const),
      day: fc.integer({ min: 0, max: 30 }),
      ref: fc.integer({ min: 1, max: 4 }),
      value: fc.integer({ min: 1, max: 5_000 }),
    }),
    fc.record({
      kind: fc.constant('trade' as const),
      day: fc.integer({ min: 0, max: 30 }),
      ref: fc.integer({ min: 1, max: 6 }),
      value: fc.integer({ min: -500, max: 500 }),
      volume: fc.integer({ min: 1, max: 80 }),
    }),
    fc.record({
      kind: fc.constant('bonus' as const),
      day: fc.integer({ min: 0, max: 30 }),
      ref: fc.integer({ min: 1, max: 3 }),
      value: fc.integer({ min: -300, max: 300 }),
    }),
  )
  fc.assert(
    fc.property(fc.array(ev, { maxLength: 25 }), fc.boolean(), fc.integer(), (events, net, seed) => {
      const facts: FactRow[] = events.map((e, i) => ({
        id: i + 1,
        kind: e.kind,
        reference: 'ref' in e ? String(e.ref) : '42',
        valueMinor: 'value' in e ? e.value : null,
        currency: 'USD',
        volume: 'volume' in e ? e.volume : 0,
        // a later event at the same time has a higher id, as the outbox gives
        eventId: i + 1,
        eventTime: T0 + e.day * DAY + i,
      }))
      const p = net ? netDeposits : terms
      const once = derive(
        [...facts].sort((a, b) => a.eventTime - b.eventTime),
        p,
      )
      // shuffled, and each fact delivered again (the same fact row: the ledger keeps one per event)
      const shuffled = [...facts, ...facts.filter((_, i) => (seed + i) % 3 === 0)]
      for (let i = shuffled.length - 1; i > 0; i--) {
        const j = Math.abs(seed * (i + 7)) % (i + 1)
        ;[shuffled[i], shuffled[j]] = [shuffled[j], shuffled[i]]
      }
      expect(derive(shuffled, p)).toEqual(once)
      // the reversal rows never take back more than what their deposit or CPA earned
      for (const r of once.filter((x) => x.kind.endsWith('reversal'))) {
        const own = once.find(
          (x) => x.key === r.key.replace(':reversed', '').replace('rev:reversal', 'rev:deposit'),
        )
        expect(own).toBeDefined()
        expect(-r.amountMinor).toBeLessThanOrEqual(own!.amountMinor)
      }
    }),
    { numRuns: 500 },
  )
})
