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

/** The key of a tiered plan version's adjustment of a period in a currency (and of each later correction). */
export const tierKey = (period: string, planId: number, version: number, currency: string) =>
  `tier:${period}:${planId}.${version}:${currency}`

/**
 * `affiliate_periods.pricing` of a close that counts a reversal of an earlier month's deposit against that
 * month (when that month's close did too) and prices closed months again within their hold. A period closed
 * before (0) counted such a reversal in its own month: it is never priced again, and no reversal moves to it.
 */
export const PRICING_BY_DEPOSIT_MONTH = 1

/**
 * `affiliate_periods.pricing` of a close that also priced each earlier month nobody closed that joined it on
 * that month's own metric, under that month's keys (`tier:<month>:…`, `round:<month>:…`): such a period is
 * split by event month when priced again. A period closed with a lower value priced its joined months as
 * one, under the period's keys: it is priced again as one group, as it was paid.
 */
export const PRICING_SPLIT_MONTHS = 2

/** A closed period's hold window is open while a refund of one of its deposits may still reverse it. */
export const holdOpen = (period: string, holdDays: number, since: number) =>
  periodEnd(period) + holdDays * 86_400_000 > since

export interface RevshareGroup {
  planId: number
  version: number
  /** the terms of that version */
  terms: PlanTerms
  currency: string
  basis: number
  paid: number
  /**
   * the month its rows count in when the period took in months nobody closed (a tiered version's rows of
   * each such month are priced on that month's own metric); the period itself when absent
   */
  month?: string
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
  /** the metric of each earlier month nobody closed whose tiered rows joined the period (`RevshareGroup.month`) */
  months?: Map<string, { volume: number; customers: number }>
  /** every row of the period, per currency (before what the close adds) */
  totals: Map<string, number>
  /**
   * Closed months whose tier this close prices again (their hold is still open): each tiered group's basis
   * as known now (the reversals of its deposits written since count against it), what it was paid (its rows,
   * those reversals, its tier adjustment and earlier corrections) and the month's metric as known now.
   */
  reprice?: ClosedMonth[]
  /**
   * Its negative rows of the period (before what the close adds), each with the period whose earning it
   * reverses (a CPA's, a deposit's, the month a tier correction names; its own period otherwise): the
   * recruiter paid the override of that period gives back its share of each, at the rate and up to what that
   * override paid, whoever recruits it now.
   */
  negatives?: { currency: string; amount: number; reverses: string }[]
  /**
   * Per `sub:<recruit>:<period>:<currency>` key, the override this affiliate was paid on that recruit's period
   * (its rate and version) and what it still holds (that row and the take-backs written against it), whether
   * or not it recruits that recruit now.
   */
  overrides?: Map<string, { planId: number; version: number; bp: number; held: number }>
}

/** The key of a sub-affiliate override on a recruit's period in a currency (and of the take-backs of it). */
export const subKey = (recruitId: number, period: string, currency: string) =>
  `sub:${recruitId}:${period}:${currency}`

export interface ClosedMonth {
  period: string
  /** the month of its rows priced (a month nobody closed that joined `period`); `period` when absent */
  month?: string
  volume: number
  customers: number
  groups: RevshareGroup[]
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
  /** the closed period a tier correction prices again (none otherwise) */
  corrects?: string
  /** the earlier month nobody closed whose rows the row prices (a joined month's own row; none otherwise) */
  month?: string
}

/** A tiered group's rate for the month's metric. */
const monthRate = (t: PlanTerms, m: { volume: number; customers: number }) =>
  tierRate(t, t.tier_metric === 'customers' ? m.customers : m.volume)

/**
 * The rows a close adds (pure):
 * - RevShare: a period pays its rate of each plan version's basis in a currency, rounded once: the rows
 *   paid their own shares rounded toward zero, and the deliveries keep a rounding row of the period holding
 *   the difference (commission-ledger.ts); what is still missing (rows of earlier months that joined this
 *   one, rows written before the rounding row) is added to that row (kind `revshare`, key `round:…`);
 * - tiered RevShare: the period's rows were paid at their version's base rate; the month's tier of that
 *   version (by lots its customers closed on real accounts, or their first deposits) pays the tier's share
 *   of those rows' basis less what they paid (nothing below the first tier); the rows of an earlier month
 *   nobody closed that joined the period (`RevshareGroup.month`) are priced on that month's own metric
 *   (`months`), under that month's keys, as its own close would have priced them;
 * - a closed month whose hold is still open is priced again (`reprice`): its tier as known now on its
 *   basis as known now, less what it was paid; the difference is a tier adjustment of this period naming
 *   the month it corrects (same key as the month's own adjustment, so each close writes only what changed);
 * - sub-affiliates: an affiliate's recruiter earns its plan's `sub_affiliate_bp` of what the affiliate
 *   earned in the period (its rows and its tier adjustments, not its own overrides: one level). A recruiter
 *   whose plan pays no override at the period's end (suspended, or no such plan) earns nothing new.
 * - a negative row of a recruit reversing the earning of an earlier period (and a tier correction of a closed
 *   month) takes back its share of the override paid on that period from the recruiter that was paid it, at
 *   that override's rate, never more than it holds, nothing when none was paid: whoever recruits the
 *   recruit now (another recruiter since, the same, none) and whatever it pays now. Such a row is out of the
 *   base of every override of this period (the recruiter paid that still recruits it included: netted there
 *   it would be taken back at today's rate, past what that override holds, and not recorded against it), so
 *   per recruiter, recruit, period and currency what an override paid less what was taken back of it never
 *   goes below zero (an override of a month its recruit lost money in is negative and nothing is taken
 *   back of it).
 */
export function closeRows(period: string, list: readonly AffiliatePeriod[]): PeriodRow[] {
  const out: PeriodRow[] = []
  const earned = new Map<number, Map<string, number>>()
  for (const a of list) {
    const totals = new Map(a.totals)
    for (const g of a.revshare) {
      const t = g.terms
      const base = t.revshare_bp ?? 0
      // each version's rows at its own tiers: a revision mid-month does not reprice the rows before it; a
      // month nobody closed that joined this one is priced on its own metric, under its own keys
      const month = g.month ?? period
      const metric = month === period ? a : (a.months?.get(month) ?? { volume: 0, customers: 0 })
      const bp = t.type === 'tiered_revshare' ? monthRate(t, metric) : base
      const amount = share(g.basis, bp) - g.paid
      if (amount === 0) continue
      const tier = bp !== base
      out.push({
        affiliateId: a.affiliateId,
        sourceAffiliateId: 0,
        kind: tier ? 'tier_adjustment' : 'revshare',
        key: tier
          ? tierKey(month, g.planId, g.version, g.currency)
          : roundingKey(month, g.planId, g.version, g.currency),
        amountMinor: amount,
        currency: g.currency,
        basisMinor: tier ? g.basis : 0,
        rateBp: bp,
        planId: g.planId,
        planVersion: g.version,
        ...(month === period ? {} : { month }),
      })
      totals.set(g.currency, (totals.get(g.currency) ?? 0) + amount)
    }
    for (const m of a.reprice ?? [])
      for (const g of m.groups) {
        // the month's whole RevShare at its tier as known now: a late chargeback within the hold lowers both
        const bp = monthRate(g.terms, m)
        const amount = share(g.basis, bp) - g.paid
        if (amount === 0) continue
        out.push({
          affiliateId: a.affiliateId,
          sourceAffiliateId: 0,
          kind: 'tier_adjustment',
          key: tierKey(m.month ?? m.period, g.planId, g.version, g.currency),
          amountMinor: amount,
          currency: g.currency,
          basisMinor: g.basis,
          rateBp: bp,
          planId: g.planId,
          planVersion: g.version,
          corrects: m.period,
        })
        totals.set(g.currency, (totals.get(g.currency) ?? 0) + amount)
      }
    earned.set(a.affiliateId, totals)
  }
  const byId = new Map(list.map((a) => [a.affiliateId, a]))
  // who was paid each override a negative row may reverse (the recruiter of that period, not of this one)
  const holders = new Map<string, AffiliatePeriod>()
  for (const a of list) for (const k of a.overrides?.keys() ?? []) holders.set(k, a)
  for (const a of list) {
    const parent = a.parentId ? byId.get(a.parentId) : undefined
    const bp = parent?.plan?.terms.sub_affiliate_bp ?? 0
    const paying =
      parent?.plan && bp > 0 ? { planId: parent.plan.planId, version: parent.plan.version, bp } : null
    const base = new Map(earned.get(a.affiliateId) ?? [])
    // a reversal of an earlier period is never in this period's override (at today's rate, with no cap):
    // the one paid on that period gives it back at that override's rate, at most what it still holds
    for (const [k, b] of reversed(period, a, out)) {
      base.set(b.currency, (base.get(b.currency) ?? 0) - b.amount)
      const holder = holders.get(k)
      if (holder) takeBack(holder, a, k, b, out)
    }
    if (!parent || !paying) continue
    for (const [currency, total] of base) {
      const amount = share(total, bp)
      if (amount === 0) continue
      out.push({
        affiliateId: parent.affiliateId,
        sourceAffiliateId: a.affiliateId,
        kind: 'sub_affiliate',
        key: subKey(a.affiliateId, period, currency),
        amountMinor: amount,
        currency,
        basisMinor: total,
        rateBp: paying.bp,
        planId: paying.planId,
        planVersion: paying.version,
      })
    }
  }
  return out
}

interface Reversed {
  reverses: string
  currency: string
  amount: number
}

/**
 * A recruit's negative rows of the period reversing an earlier period's earning, and the negative tier
 * corrections of closed months the close writes it, summed per override they reverse (`sub:<recruit>:<that
 * period>:<currency>`).
 */
function reversed(period: string, a: AffiliatePeriod, out: readonly PeriodRow[]) {
  const back = new Map<string, Reversed>()
  const add = (reverses: string, currency: string, amount: number) => {
    if (amount >= 0 || reverses >= period) return
    const k = subKey(a.affiliateId, reverses, currency)
    const b = back.get(k) ?? { reverses, currency, amount: 0 }
    b.amount += amount
    back.set(k, b)
  }
  for (const n of a.negatives ?? []) add(n.reverses, n.currency, n.amount)
  for (const r of out)
    if (r.affiliateId === a.affiliateId && r.kind === 'tier_adjustment' && r.corrects)
      add(r.corrects, r.currency, r.amountMinor)
  return back
}

/**
 * The recruiter paid an override on a recruit's period gives back its share of what reverses that period's
 * earning: at the rate that override paid, never more than it still holds. One row per period reversed and
 * currency, naming it (`corrects`).
 */
function takeBack(holder: AffiliatePeriod, a: AffiliatePeriod, k: string, b: Reversed, out: PeriodRow[]) {
  const o = holder.overrides?.get(k)
  if (!o || o.held <= 0) return
  const amount = -Math.min(-share(b.amount, o.bp), o.held)
  if (amount === 0) return
  out.push({
    affiliateId: holder.affiliateId,
    sourceAffiliateId: a.affiliateId,
    kind: 'sub_affiliate',
    key: k,
    amountMinor: amount,
    currency: b.currency,
    basisMinor: b.amount,
    rateBp: o.bp,
    planId: o.planId,
    planVersion: o.version,
    corrects: b.reverses,
  })
}
