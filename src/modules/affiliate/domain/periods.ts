import { type AppliedPlan, type PlanTerms, share, tierRate } from './plans'

/** Commission periods are UTC calendar months, `YYYY-MM`. */
export const PERIOD = /^\d{4}-(0[1-9]|1[0-2])$/

export const periodOf = (ms: number) => new Date(ms).toISOString().slice(0, 7)

export const periodStart = (p: string) => Date.UTC(Number(p.slice(0, 4)), Number(p.slice(5, 7)) - 1, 1)

export const periodEnd = (p: string) => Date.UTC(Number(p.slice(0, 4)), Number(p.slice(5, 7)), 1)

const nextPeriod = (p: string) => periodOf(periodEnd(p))

/**
 * The period a row for an event at `time` goes to: its own month, unless that month is closed, then the
 * first open one (corrections of a closed period land there).
 */
export const openPeriodFor = (time: number, closedThrough: string | null) => {
  const own = periodOf(time)
  return closedThrough && own <= closedThrough ? nextPeriod(closedThrough) : own
}

/**
 * The key of the row of a period that rounds one plan version's RevShare in a currency once (the period
 * pays its rate of the whole basis, not the sum of each row's rounding).
 */
export const roundingKey = (period: string, planId: number, version: number, currency: string) =>
  `round:${period}:${planId}.${version}:${currency}`

interface RevshareGroup {
  planId: number
  version: number
  /** the terms of that version */
  terms: PlanTerms
  currency: string
  basis: number
  paid: number
}

/** What a close knows of one affiliate's period. */
export interface AffiliatePeriod {
  affiliateId: number
  parentId: number | null
  /** the plan in effect at the period's end; none when the affiliate does not earn then (standing.ts) */
  plan: AppliedPlan | null
  /** the period's RevShare rows per plan version and currency: their basis and what they paid */
  revshare: RevshareGroup[]
  /** closed hundredths of a lot of its customers' trades in the period */
  volume: number
  /** its customers' first deposits in the period */
  customers: number
  /** every row of the period, per currency (before what the close adds) */
  totals: Map<string, number>
}

interface PeriodRow {
  affiliateId: number
  sourceAffiliateId: number
  kind: 'tier_adjustment' | 'sub_affiliate' | 'revshare'
  key: string
  amountMinor: number
  currency: string
  basisMinor: number
  rateBp: number
  planId: number
  planVersion: number
}

/**
 * The rows a close adds (pure):
 * - RevShare: a period pays its rate of each plan version's basis in a currency, rounded once: the rows
 *   paid their own shares rounded toward zero, and the deliveries keep a rounding row of the period holding
 *   the difference (commission-ledger.ts); what is still missing (rows of earlier months that joined this
 *   one, rows written before the rounding row) is added to that row (kind `revshare`, key `round:…`);
 * - tiered RevShare: the period's rows were paid at their version's base rate; the month's tier of that
 *   version (by lots its customers closed on real accounts, or their first deposits) pays the tier's share
 *   of those rows' basis less what they paid (nothing below the first tier);
 * - sub-affiliates: an affiliate's recruiter earns its plan's `sub_affiliate_bp` of what the affiliate
 *   earned in the period (its rows and its tier adjustment, not its own overrides: one level).
 */
export function closeRows(period: string, list: readonly AffiliatePeriod[]): PeriodRow[] {
  const out: PeriodRow[] = []
  const earned = new Map<number, Map<string, number>>()
  for (const a of list) {
    const totals = new Map(a.totals)
    for (const g of a.revshare) {
      const t = g.terms
      const base = t.revshare_bp ?? 0
      // each version's rows at its own tiers: a revision mid-month does not reprice the rows before it
      const bp =
        t.type === 'tiered_revshare'
          ? tierRate(t, t.tier_metric === 'customers' ? a.customers : a.volume)
          : base
      const amount = share(g.basis, bp) - g.paid
      if (amount === 0) continue
      const tier = bp !== base
      out.push({
        affiliateId: a.affiliateId,
        sourceAffiliateId: 0,
        kind: tier ? 'tier_adjustment' : 'revshare',
        key: tier
          ? `tier:${period}:${g.planId}.${g.version}:${g.currency}`
          : roundingKey(period, g.planId, g.version, g.currency),
        amountMinor: amount,
        currency: g.currency,
        basisMinor: tier ? g.basis : 0,
        rateBp: bp,
        planId: g.planId,
        planVersion: g.version,
      })
      totals.set(g.currency, (totals.get(g.currency) ?? 0) + amount)
    }
    earned.set(a.affiliateId, totals)
  }
  const byId = new Map(list.map((a) => [a.affiliateId, a]))
  for (const a of list) {
    if (!a.parentId) continue
    const parent = byId.get(a.parentId)
    const bp = parent?.plan?.terms.sub_affiliate_bp ?? 0
    if (!parent?.plan || bp <= 0) continue
    for (const [currency, total] of earned.get(a.affiliateId) ?? []) {
      const amount = share(total, bp)
      if (amount === 0) continue
      out.push({
        affiliateId: parent.affiliateId,
        sourceAffiliateId: a.affiliateId,
        kind: 'sub_affiliate',
        key: `sub:${a.affiliateId}:${period}:${currency}`,
        amountMinor: amount,
        currency,
        basisMinor: total,
        rateBp: bp,
        planId: parent.plan.planId,
        planVersion: parent.plan.version,
      })
    }
  }
  return out
}
