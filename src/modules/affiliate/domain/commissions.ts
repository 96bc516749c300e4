import type { Fact } from './conversions'
import { type AppliedPlan, type PlanTerms, paysCpa, paysRevshare, share } from './plans'

/**
 * What one referred customer's facts earn its affiliate (issue 44), as a pure function of the facts and the
 * plans in effect at their times, like the conversion rules (conversions.ts): facts in any order and
 * repeated give the same rows.
 *
 * - CPA (cpa, qualified_cpa, hybrid): once per customer, under the plan in effect at the first deposit
 *   (the earliest credited deposit). It qualifies when the first deposit is at least the plan's minimum in
 *   its currency, the customer is KYC approved (when asked) and has closed the plan's lots on real accounts
 *   within its days of the first deposit (when asked); the row is dated when the last condition was met.
 *   A refund or chargeback that leaves the first deposit below the minimum (or at nothing) voids it: before
 *   the CPA qualified, the CPA never does; within the hold days of the deposit, the CPA is taken back by a
 *   negative row dated at the reversal; after the hold days, nothing changes.
 * - RevShare (revshare, tiered_revshare at its base rate, hybrid), per fact under the plan in effect then:
 *   - trading revenue: each closed trade's commission and swap the customer paid on a real account, plus
 *     the plan's spread markup per lot in the account's currency; each bonus credited takes its amount off
 *     (a bonus taken back gives it back);
 *   - net deposits: each credited deposit, less each withdrawal paid, less a refund or chargeback of a
 *     deposit within the hold days of that deposit (after them it changes nothing already earned).
 *   A row whose share rounds to nothing is kept when it has a basis: a tiered plan pays its tier on it.
 *
 * While the affiliate does not earn (suspended, or its access to the brand revoked: `earns`, standing.ts) a
 * fact earns nothing: no CPA whose first deposit or qualification falls then, and no RevShare row that adds
 * to what it is paid. A row that takes back still counts (a withdrawal, a trade whose swap the broker paid),
 * as does the reversal of what it earned before: a suspension never keeps money a refund or withdrawal would
 * have taken back. Bonuses count whenever they move (a credit takes off, its take-back gives back).
 *
 * Tier adjustments and sub-affiliate overrides depend on a whole period; a close writes them (periods.ts).
 */

export interface FactRow extends Fact {
  id: number
}

export type CommissionKind = 'cpa' | 'cpa_reversal' | 'revshare' | 'revshare_reversal'

export interface DerivedCommission {
  key: string
  kind: CommissionKind
  amountMinor: number
  currency: string
  basisMinor: number
  rateBp: number
  volume: number
  planId: number
  planVersion: number
  factIds: number[]
  eventTime: number
}

const DAY = 86_400_000
/** A trade on a real account carries the account's currency; a demo one none (no revenue, no lots that pay). */
const onRealAccount = (f: Fact) => f.currency !== ''
const byTime = (a: Fact, b: Fact) => a.eventTime - b.eventTime || a.eventId - b.eventId

/** One fact per (kind, event): the ledger's unique key; a repeat of the same event is the same fact. */
function distinct(facts: readonly FactRow[]) {
  const seen = new Map<string, FactRow>()
  for (const f of facts) {
    const k = `${f.kind}:${f.eventId}`
    const have = seen.get(k)
    if (!have || f.id < have.id) seen.set(k, f)
  }
  return [...seen.values()].sort(byTime)
}

/** The first of each reference (a ticket closes once, a deposit is credited once). */
function firstByReference(facts: readonly FactRow[]) {
  const out = new Map<string, FactRow>()
  for (const f of facts) if (!out.has(f.reference)) out.set(f.reference, f)
  return out
}

/** What the CPA rules make of a customer's first deposit under a plan's terms. */
interface Qualification {
  /** when its last condition was met; null when it never was (yet) */
  at: number | null
  /** the facts that qualified it */
  because: FactRow[]
  /** the refund or chargeback of the first deposit that leaves it below the minimum (or at nothing) */
  voided: FactRow | undefined
  /** that reversal came within the plan's hold days of the deposit: what the deposit caused is taken back */
  voidedInHold: boolean
}

/**
 * The CPA's qualification of a first deposit (also what a tiered plan's `customers` count): at least the
 * plan's minimum in its currency, KYC approved (when asked), the plan's lots closed on real accounts within
 * its days of the first deposit (when asked); dated when the last condition was met. A refund or chargeback
 * that leaves the first deposit below the minimum (or at nothing) voids it.
 */
function qualification(
  first: FactRow,
  kyc: FactRow | undefined,
  trades: ReadonlyMap<string, FactRow>,
  reversals: ReadonlyMap<string, FactRow>,
  t: PlanTerms,
): Qualification {
  const q = t.qualify ?? {}
  const minimum = q.min_first_deposit ?? {}
  const named = Object.keys(minimum).length > 0
  const depositOk =
    !named || (minimum[first.currency] !== undefined && (first.valueMinor ?? 0) >= minimum[first.currency])
  const because: FactRow[] = [first]
  let at: number | null = depositOk ? first.eventTime : null
  if (at !== null && q.kyc_approved) {
    if (kyc) {
      because.push(kyc)
      at = Math.max(at, kyc.eventTime)
    } else at = null
  }
  if (at !== null && q.min_centilots) {
    const until = first.eventTime + (q.within_days ?? 0) * DAY
    let lots = 0
    let reached: FactRow | undefined
    for (const f of trades.values()) {
      if (!onRealAccount(f) || f.eventTime < first.eventTime || f.eventTime > until) continue
      lots += f.volume
      because.push(f)
      if (lots >= q.min_centilots) {
        reached = f
        break
      }
    }
    at = reached ? Math.max(at, reached.eventTime) : null
  }
  // a refund that leaves less than the minimum (or nothing) voids the first deposit
  const r = reversals.get(first.reference)
  const left = (first.valueMinor ?? 0) - Math.abs(r?.valueMinor ?? 0)
  const voided = r && left < (named ? (minimum[first.currency] ?? 1) : 1) ? r : undefined
  const voidedInHold = voided !== undefined && voided.eventTime - first.eventTime <= t.hold_days * DAY
  return { at, because, voided, voidedInHold }
}

/**
 * Whether a customer's first deposit counts toward a tiered plan's `customers` (pure): it qualifies as the
 * CPA of `terms` (the plan in effect at the first deposit) would, and stands, as the CPA is kept: not
 * voided before it qualified nor within the hold days (a 1-cent deposit charged back raises no tier). Null
 * without a first deposit. `terms` null (no plan then): the first deposit counts unless reversed in full.
 */
export function firstDepositCounts(
  facts: readonly FactRow[],
  terms: (time: number) => PlanTerms | null,
): { first: FactRow; counts: boolean } | null {
  const sorted = distinct(facts)
  const of = (kind: Fact['kind']) => sorted.filter((f) => f.kind === kind)
  const first = firstByReference(of('deposit')).values().next().value as FactRow | undefined
  if (!first) return null
  const t = terms(first.eventTime) ?? {
    type: 'cpa',
    hold_days: Number.POSITIVE_INFINITY,
    sub_affiliate_bp: 0,
  }
  const q = qualification(
    first,
    of('kyc')[0],
    firstByReference(of('trade')),
    firstByReference(of('reversal')),
    t,
  )
  const counts = q.at !== null && !(q.voided && (q.voided.eventTime <= q.at || q.voidedInHold))
  return { first, counts }
}

export function deriveCommissions(
  customerId: number,
  facts: readonly FactRow[],
  planAt: (time: number) => AppliedPlan | null,
  earns: (time: number) => boolean = () => true,
): DerivedCommission[] {
  const sorted = distinct(facts)
  const of = (kind: Fact['kind']) => sorted.filter((f) => f.kind === kind)
  const deposits = firstByReference(of('deposit'))
  const reversals = firstByReference(of('reversal'))
  const trades = firstByReference(of('trade'))
  const out: DerivedCommission[] = []
  const key = (k: string) => `c${customerId}:${k}`
  const row = (
    k: string,
    kind: CommissionKind,
    plan: AppliedPlan,
    f: FactRow,
    amountMinor: number,
    basisMinor: number,
    rateBp: number,
    factIds: number[],
    volume = 0,
  ) =>
    out.push({
      key: key(k),
      kind,
      amountMinor,
      currency: f.currency,
      basisMinor,
      rateBp,
      volume,
      planId: plan.planId,
      planVersion: plan.version,
      factIds,
      eventTime: f.eventTime,
    })

  /** the reversal of a deposit within the plan's hold days of it, if any */
  const heldReversal = (deposit: FactRow, holdDays: number) => {
    const r = reversals.get(deposit.reference)
    return r && r.eventTime - deposit.eventTime <= holdDays * DAY ? r : undefined
  }

  // CPA
  const first = deposits.values().next().value as FactRow | undefined
  const cpaPlan = first ? planAt(first.eventTime) : null
  if (first && cpaPlan && paysCpa(cpaPlan.terms)) {
    const t = cpaPlan.terms
    const amount = t.cpa?.[first.currency]
    const q = qualification(first, of('kyc')[0], trades, reversals, t)
    const { at, voided } = q
    // earned only when both the first deposit and the qualification fell while it earned
    const earned = at !== null && earns(first.eventTime) && earns(at)
    if (at !== null && amount !== undefined && !(voided && voided.eventTime <= at) && earned) {
      out.push({
        key: key('cpa'),
        kind: 'cpa',
        amountMinor: amount,
        currency: first.currency,
        basisMinor: amount,
        rateBp: 0,
        volume: 0,
        planId: cpaPlan.planId,
        planVersion: cpaPlan.version,
        factIds: q.because.map((f) => f.id).sort((a, b) => a - b),
        eventTime: at,
      })
      if (voided && q.voidedInHold)
        row('cpa:reversed', 'cpa_reversal', cpaPlan, voided, -amount, -amount, 0, [first.id, voided.id])
    }
  }

  // RevShare
  const bonuses = firstByReference(of('bonus'))
  const withdrawals = firstByReference(of('withdrawal'))
  const firstOfItsReference: Partial<Record<Fact['kind'], Map<string, FactRow>>> = {
    trade: trades,
    deposit: deposits,
    bonus: bonuses,
    withdrawal: withdrawals,
  }
  for (const f of sorted) {
    if (firstOfItsReference[f.kind]?.get(f.reference) !== f) continue
    const plan = planAt(f.eventTime)
    if (!plan || !paysRevshare(plan.terms)) continue
    const t = plan.terms
    const bp = t.revshare_bp ?? 0
    const basis = t.revshare_basis ?? 'trading_revenue'
    // what would add to its pay while it does not earn is left out; what takes back is not
    const adds = (b: number) => b > 0 && !earns(f.eventTime)
    if (basis === 'trading_revenue' && f.kind === 'trade') {
      if (f.valueMinor === null || !onRealAccount(f)) continue
      const revenue = f.valueMinor + Math.trunc(((t.markup_per_lot?.[f.currency] ?? 0) * f.volume) / 100)
      if (adds(revenue)) continue
      row(`rev:trade:${f.reference}`, 'revshare', plan, f, share(revenue, bp), revenue, bp, [f.id], f.volume)
    } else if (basis === 'trading_revenue' && f.kind === 'bonus') {
      // a bonus adjusts revenue whenever it moves (its take-back mirrors its credit), whatever the standing
      const bonus = f.valueMinor ?? 0
      row(`rev:bonus:${f.reference}`, 'revshare', plan, f, share(-bonus, bp), -bonus, bp, [f.id])
    } else if (basis === 'net_deposits' && f.kind === 'withdrawal') {
      const paid = Math.abs(f.valueMinor ?? 0)
      row(`rev:withdrawal:${f.reference}`, 'revshare', plan, f, share(-paid, bp), -paid, bp, [f.id])
    } else if (basis === 'net_deposits' && f.kind === 'deposit') {
      const amount = f.valueMinor ?? 0
      // a deposit it did not earn on: its refund takes nothing back either
      if (adds(amount)) continue
      row(`rev:deposit:${f.reference}`, 'revshare', plan, f, share(amount, bp), amount, bp, [f.id])
      const r = heldReversal(f, t.hold_days)
      if (r) {
        const back = Math.min(Math.abs(r.valueMinor ?? 0), amount)
        row(`rev:reversal:${f.reference}`, 'revshare_reversal', plan, r, -share(back, bp), -back, bp, [
          f.id,
          r.id,
        ])
      }
    }
  }
  return out.filter((r) => r.amountMinor !== 0 || r.basisMinor !== 0)
}
