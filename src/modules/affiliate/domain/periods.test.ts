// Sub-affiliate overrides across closes, as a property (review 3a): whoever recruits the recruit in each
// month and whatever each recruiter pays then, an override less what was taken back of it never goes below
// zero, a take-back is at the rate of the override it reverses, and a reversal of an earlier month is never
// in the base of the month closing.
import { expect, test } from 'bun:test'
import fc from 'fast-check'
import { type AffiliatePeriod, closeRows, subKey } from './periods'
import { share } from './plans'

const RECRUIT = 2
const RECRUITERS = [10, 11] as const
const PERIODS = ['2027-01', '2027-02', '2027-03', '2027-04', '2027-05', '2027-06']
const CURRENCIES = ['USD', 'EUR'] as const

interface Written {
  affiliateId: number
  key: string
  period: string
  amount: number
  rateBp: number
  corrects: string
}

const month = fc.record({
  // who recruits the recruit at the month's end (none: detached), and what each recruiter's plan pays then
  // (0: suspended or a plan without an override)
  parent: fc.constantFrom<number | null>(null, ...RECRUITERS),
  rates: fc.tuple(...RECRUITERS.map(() => fc.constantFrom(0, 1000, 2500, 5000))),
  // the recruit's own earning of the month per currency (a month it lost money in is negative)
  own: fc.tuple(...CURRENCIES.map(() => fc.integer({ min: -5_000, max: 60_000 }))),
  // its negative rows reversing an earlier month's earning (a chargeback, a refund, a tier correction)
  reversals: fc.array(
    fc.record({
      back: fc.nat({ max: PERIODS.length - 1 }),
      currency: fc.constantFrom(...CURRENCIES),
      amount: fc.integer({ min: 1, max: 80_000 }),
    }),
    { maxLength: 4 },
  ),
})

test('property: an override less its take-backs never goes below zero, whoever recruits and whatever it pays', () => {
  fc.assert(
    fc.property(fc.array(month, { minLength: PERIODS.length, maxLength: PERIODS.length }), (months) => {
      const ledger: Written[] = []
      for (const [i, period] of PERIODS.entries()) {
        const m = months[i]!
        const negatives = m.reversals
          .filter((r) => r.back < i)
          .map((r) => ({ currency: r.currency, amount: -r.amount, reverses: PERIODS[r.back]! }))
        const totals = new Map<string, number>(CURRENCIES.map((c, j) => [c, m.own[j]!]))
        for (const n of negatives) totals.set(n.currency, (totals.get(n.currency) ?? 0) + n.amount)
        // what the service reads (addTakeBacks): the override each reversed month paid (its own row, positive)
        // with its recruiter and rate, and what that one still holds (that row and the take-backs since)
        const overrides = new Map<number, NonNullable<AffiliatePeriod['overrides']>>()
        for (const n of negatives) {
          const key = subKey(RECRUIT, n.reverses, n.currency)
          const paid = ledger.find((w) => w.key === key && w.period === n.reverses && w.amount > 0)
          if (!paid) continue
          const held = ledger
            .filter((w) => w.key === key && w.affiliateId === paid.affiliateId)
            .reduce((s, w) => s + w.amount, 0)
          const of = overrides.get(paid.affiliateId) ?? new Map()
          of.set(key, { planId: 4, version: 1, bp: paid.rateBp, held })
          overrides.set(paid.affiliateId, of)
        }
        const list: AffiliatePeriod[] = [
          {
            affiliateId: RECRUIT,
            parentId: m.parent,
            plan: null,
            revshare: [],
            volume: 0,
            customers: 0,
            totals,
            negatives,
          },
          ...RECRUITERS.map((id, j) => ({
            affiliateId: id,
            parentId: null,
            plan:
              m.rates[j]! > 0
                ? {
                    planId: 20 + j,
                    version: 1,
                    terms: {
                      type: 'revshare' as const,
                      revshare_bp: 0,
                      hold_days: 0,
                      sub_affiliate_bp: m.rates[j]!,
                    },
                  }
                : null,
            revshare: [],
            volume: 0,
            customers: 0,
            totals: new Map<string, number>(),
            overrides: overrides.get(id),
          })),
        ]
        const rows = closeRows(period, list)
        for (const r of rows)
          ledger.push({
            affiliateId: r.affiliateId,
            key: r.key,
            period,
            amount: r.amountMinor,
            rateBp: r.rateBp,
            corrects: r.corrects ?? '',
          })

        // this month's override: the recruiter of the month's end, when it pays, on the month's own earning
        // only (no reversal of an earlier month, whatever recruiter was paid on it)
        const j = m.parent === null ? -1 : (RECRUITERS as readonly number[]).indexOf(m.parent)
        for (const [c, currency] of CURRENCIES.entries()) {
          const own = rows.filter((r) => r.key === subKey(RECRUIT, period, currency))
          const bp = j >= 0 ? m.rates[j]! : 0
          const want = bp > 0 ? share(m.own[c]!, bp) : 0
          expect(own.map((r) => [r.affiliateId, r.amountMinor])).toEqual(
            want === 0 ? [] : [[m.parent ?? 0, want]],
          )
        }
      }

      // per recruiter and key (recruit, month, currency): the month's own override, then take-backs of it
      const byHolder = new Map<string, Written[]>()
      for (const w of ledger) {
        const k = `${w.affiliateId}|${w.key}`
        byHolder.set(k, [...(byHolder.get(k) ?? []), w])
      }
      for (const rows of byHolder.values()) {
        const key = rows[0]!.key
        const paid = rows.filter((w) => w.corrects === '')
        const back = rows.filter((w) => w.corrects !== '')
        expect(paid.length).toBeLessThanOrEqual(1)
        expect(back.every((w) => w.amount < 0 && key.split(':')[2] === w.corrects)).toBe(true)
        const p = paid[0]
        // a take-back only of a positive override, at its rate, and never past it
        if (back.length > 0) {
          expect(p?.amount ?? 0).toBeGreaterThan(0)
          expect(back.every((w) => w.rateBp === p!.rateBp)).toBe(true)
        }
        if ((p?.amount ?? 0) > 0) expect(rows.reduce((s, w) => s + w.amount, 0)).toBeGreaterThanOrEqual(0)
      }
    }),
    { numRuns: 500 },
  )
})

test('take-back: the override paid gives back its own rate of each reversal until nothing is left of it', () => {
  // February paid 10% of 5,000; March reverses 3,000, April 4,000 of February's earning
  const recruiter = (held: number) => ({
    affiliateId: 3,
    parentId: null,
    plan: {
      planId: 9,
      version: 1,
      terms: { type: 'revshare' as const, revshare_bp: 0, hold_days: 0, sub_affiliate_bp: 5000 },
    },
    revshare: [],
    volume: 0,
    customers: 0,
    totals: new Map<string, number>(),
    overrides: new Map([['sub:2:2027-02:USD', { planId: 4, version: 1, bp: 1000, held }]]),
  })
  const recruit = (amount: number, own: number) => ({
    affiliateId: 2,
    parentId: 3,
    plan: null,
    revshare: [],
    volume: 0,
    customers: 0,
    totals: new Map([['USD', own - amount]]),
    negatives: [{ currency: 'USD', amount: -amount, reverses: '2027-02' }],
  })
  const of = (rows: ReturnType<typeof closeRows>) => rows.map((r) => [r.key, r.amountMinor, r.rateBp])
  expect(of(closeRows('2027-03', [recruit(3_000, 1_000), recruiter(500)]))).toEqual([
    ['sub:2:2027-02:USD', -300, 1000],
    ['sub:2:2027-03:USD', 500, 5000],
  ])
  // 200 left of it: 400 at its rate is capped there
  expect(of(closeRows('2027-04', [recruit(4_000, 0), recruiter(200)]))).toEqual([
    ['sub:2:2027-02:USD', -200, 1000],
  ])
})
