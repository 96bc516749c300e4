import type { Standing } from './standing'
/**
 * Commission plans (issue 44). A plan's terms are one of five types; amounts are integer minor units,
 * rates basis points (1 bp = 0.01 %), and amounts that depend on a currency are given per currency, so no
 * exchange rate is ever guessed: a deposit in a currency the plan does not name earns no CPA.
 */
export const PLAN_TYPES = ['cpa', 'qualified_cpa', 'revshare', 'tiered_revshare', 'hybrid'] as const
type PlanType = (typeof PLAN_TYPES)[number]

/** What RevShare is a share of. */
export const REVSHARE_BASES = ['trading_revenue', 'net_deposits'] as const
type RevshareBasis = (typeof REVSHARE_BASES)[number]

export const TIER_METRICS = ['volume_lots', 'customers'] as const
type TierMetric = (typeof TIER_METRICS)[number]

export interface PlanTerms {
  type: PlanType
  /** CPA, qualified CPA, hybrid: the amount per qualified customer, per currency of the first deposit */
  cpa?: Record<string, number>
  /** qualified CPA (and hybrid, when given): what a customer must do to qualify */
  qualify?: {
    /** per currency of the first deposit; a currency not named does not qualify (none named: no minimum) */
    min_first_deposit?: Record<string, number>
    /** closed hundredths of a lot within `within_days` of the first deposit */
    min_centilots?: number
    within_days?: number
    kyc_approved?: boolean
  }
  /** RevShare, tiered (the first tier), hybrid */
  revshare_bp?: number
  revshare_basis?: RevshareBasis
  /** tiered: the month's rate is the highest tier whose `from` the month's metric reaches */
  tiers?: { from: number; bp: number }[]
  tier_metric?: TierMetric
  /** trading revenue: the spread markup the broker earns per lot, per account currency (minor units) */
  markup_per_lot?: Record<string, number>
  /** days after a deposit within which its refund or chargeback reverses what the deposit caused */
  hold_days: number
  /** sub-affiliates: this share of what an affiliate this one recruited earns in a period */
  sub_affiliate_bp: number
}

/** A plan as it applied at some time: which plan, which version, its terms. */
export interface AppliedPlan {
  planId: number
  version: number
  terms: PlanTerms
}

const hasCpa = (t: PlanTerms) => t.type === 'cpa' || t.type === 'qualified_cpa' || t.type === 'hybrid'
export const paysCpa = hasCpa
export const paysRevshare = (t: PlanTerms) =>
  t.type === 'revshare' || t.type === 'tiered_revshare' || t.type === 'hybrid'

/** The checks a plan's terms must pass beyond their shape: a message naming the field, or null. */
export function termsProblem(t: PlanTerms): string | null {
  if (hasCpa(t) && (!t.cpa || Object.keys(t.cpa).length === 0))
    return `cpa: a ${t.type} plan names its amount per currency`
  const q = t.qualify
  const conditions =
    q &&
    (Object.keys(q.min_first_deposit ?? {}).length > 0 ||
      (q.min_centilots ?? 0) > 0 ||
      q.kyc_approved === true)
  if (t.type === 'qualified_cpa' && !conditions)
    return 'qualify: a qualified_cpa plan names at least one condition'
  if (q?.min_centilots && !q.within_days)
    return 'qualify.within_days: a minimum of lots needs its number of days'
  if (q?.within_days && !q.min_centilots) return 'qualify.within_days: days count only with min_centilots'
  if (paysRevshare(t) && t.revshare_bp === undefined) return `revshare_bp: a ${t.type} plan names its rate`
  if (t.type === 'tiered_revshare') {
    if (!t.tiers || t.tiers.length === 0) return 'tiers: a tiered_revshare plan names its tiers'
    if (!t.tier_metric) return 'tier_metric: a tiered_revshare plan names what its tiers count'
    for (let i = 1; i < t.tiers.length; i++)
      if (t.tiers[i].from <= t.tiers[i - 1].from) return 'tiers: `from` rises from one tier to the next'
    for (let i = 0; i < t.tiers.length; i++)
      if (t.tiers[i].bp < (i === 0 ? (t.revshare_bp ?? 0) : t.tiers[i - 1].bp))
        return 'tiers: a tier pays at least the rate below it (revshare_bp, then the tier before)'
  }
  return null
}

/** The month's rate of a tiered plan for the month's metric (the base rate below the first tier). */
export function tierRate(t: PlanTerms, metric: number) {
  let bp = t.revshare_bp ?? 0
  for (const tier of t.tiers ?? []) if (metric >= tier.from) bp = tier.bp
  return bp
}

/** `basis × bp / 10000` in whole minor units, rounded toward zero (a reversal takes back exactly as much). */
export function share(basis: number, bp: number) {
  const q = (BigInt(Math.trunc(basis)) * BigInt(Math.trunc(bp))) / 10_000n
  return Number(q)
}

/**
 * The plan in effect at `time`: the latest assignment of the affiliate at or before it (else the brand's
 * default at that time), in the version of that plan in effect then.
 */
export interface PlanTimeline {
  /** affiliate's own assignments and the brand's defaults, each oldest first */
  own: { from: number; planId: number }[]
  defaults: { from: number; planId: number }[]
  versions: Map<number, { version: number; from: number; terms: PlanTerms }[]>
  /** when the affiliate earns on the brand (standing.ts) */
  standing: Standing
}

const latestAt = <T extends { from: number }>(list: readonly T[], time: number): T | undefined => {
  let out: T | undefined
  for (const x of list) if (x.from <= time) out = x
  return out
}

export function planAt(tl: PlanTimeline, time: number): AppliedPlan | null {
  const a = latestAt(tl.own, time) ?? latestAt(tl.defaults, time)
  if (!a) return null
  const v = latestAt(tl.versions.get(a.planId) ?? [], time)
  return v ? { planId: a.planId, version: v.version, terms: v.terms } : null
}
