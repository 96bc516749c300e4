import { and, between, desc, eq, gt, gte, inArray, lt, lte, ne, type SQL, sql } from 'drizzle-orm'
import { brands } from '../../../kernel/brand/schema'
import { chunks } from '../../../kernel/cache/store'
import type { Tx } from '../../../kernel/db/client'
import { invalid } from '../../../kernel/http/errors'
import type { AffiliateCtx } from '../context'
import { type FactRow, firstDepositCounts } from '../domain/commissions'
import {
  type AffiliatePeriod,
  type ClosedMonth,
  closeRows,
  holdOpen,
  PERIOD,
  PRICING_BY_DEPOSIT_MONTH,
  PRICING_SPLIT_MONTHS,
  periodEnd,
  periodOf,
  periodStart,
  type RevshareGroup,
  subKey,
  tierKey,
} from '../domain/periods'
import { type PlanTerms, type PlanTimeline, planAt } from '../domain/plans'
import { earningSpans, earnsAt, everChanged, standingOf } from '../domain/standing'
import { refuse } from '../errors'
import {
  affiliateAccess,
  commissionPeriods,
  commissionPlans,
  commissions,
  conversionFacts,
  conversions,
  planAssignments,
  planVersions,
  referredCustomers,
  revshareTotals,
  standingChanges,
  statements,
} from '../schema'
import { closedThrough } from './commission-ledger'
import { commissionView, statementView } from './reports'

interface Total {
  currency: string
  amount_minor: number
  rows: number
}

/**
 * Every plan timeline of a brand, read at once (a close looks up each affiliate's plan at the end), and
 * the terms of each version of the brand's plans (a row names the version it was paid under).
 */
async function brandPlans(tx: Tx, brandId: number) {
  const assigned = await tx
    .select()
    .from(planAssignments)
    .where(eq(planAssignments.brandId, brandId))
    .orderBy(planAssignments.effectiveFrom)
  const versions = new Map<number, { version: number; from: number; terms: PlanTerms }[]>()
  for (const v of await tx
    .select({
      planId: planVersions.planId,
      version: planVersions.version,
      effectiveFrom: planVersions.effectiveFrom,
      terms: planVersions.terms,
    })
    .from(planVersions)
    .innerJoin(commissionPlans, eq(commissionPlans.id, planVersions.planId))
    .where(eq(commissionPlans.brandId, brandId))
    .orderBy(planVersions.effectiveFrom, planVersions.version)) {
    const list = versions.get(v.planId) ?? []
    list.push({ version: v.version, from: v.effectiveFrom, terms: JSON.parse(v.terms) as PlanTerms })
    versions.set(v.planId, list)
  }
  const defaults = assigned
    .filter((a) => a.affiliateId === 0)
    .map((a) => ({ from: a.effectiveFrom, planId: a.planId }))
  const changes = await tx
    .select()
    .from(standingChanges)
    .where(inArray(standingChanges.brandId, [brandId, 0]))
    .orderBy(standingChanges.fromTime, standingChanges.id)
  const changesOf = new Map<number, typeof changes>()
  for (const c of changes) changesOf.set(c.affiliateId, [...(changesOf.get(c.affiliateId) ?? []), c])
  return {
    timelineOf: (affiliateId: number): PlanTimeline => ({
      own: assigned
        .filter((a) => a.affiliateId === affiliateId)
        .map((a) => ({ from: a.effectiveFrom, planId: a.planId })),
      defaults,
      versions,
      standing: standingOf(changesOf.get(affiliateId) ?? [], brandId),
    }),
    termsOf: (planId: number, version: number) =>
      versions.get(planId)?.find((v) => v.version === version)?.terms ?? null,
    /** the terms of each tiered plan version of the brand, by `<plan>.<version>` (its closed months are priced again) */
    tiered: new Map(
      [...versions.entries()].flatMap(([planId, list]) =>
        list
          .filter((v) => v.terms.type === 'tiered_revshare')
          .map((v) => [`${planId}.${v.version}`, v.terms] as const),
      ),
    ),
  }
}

type BrandPlans = Awaited<ReturnType<typeof brandPlans>>

/** The UTC month of a ledger row's event (`YYYY-MM`), read by the database. */
const eventMonth = sql<string>`strftime('%Y-%m', ${commissions.eventTime} / 1000, 'unixepoch')`

/** The month after `closed` (the first open one then), or '' when nothing was closed. */
const firstOpen = (closed: string | null | undefined) => (closed ? periodOf(periodEnd(closed)) : '')

/**
 * The month a RevShare row of a period counts in for a tiered plan: the month of its event, no earlier than
 * `first`, the first month that was open when it was written (a late row of a closed month was written
 * there). A period whose close took in earlier months nobody closed thus splits back into them, each priced
 * on its own metric (ADR 0024's "close once": their rows joined it); any other period's rows all count in
 * it. Rows of a period are written only while it is open, so this is what the month was when they were.
 */
const countsIn = (month: string, first: string) => (month < first ? first : month)

/** The tiered group of an affiliate's period for a plan version, currency and month, made when missing. */
function groupIn(
  a: Pick<AffiliatePeriod, 'revshare'>,
  planId: number,
  version: number,
  terms: PlanTerms,
  currency: string,
  month: string | undefined,
) {
  let g = a.revshare.find(
    (x) => x.planId === planId && x.version === version && x.currency === currency && x.month === month,
  )
  if (!g) {
    g = { planId, version, terms, currency, basis: 0, paid: 0, ...(month === undefined ? {} : { month }) }
    a.revshare.push(g)
  }
  return g
}

/** The plan that pays at `time`, or none while the affiliate does not earn (its sub-affiliate overrides). */
const earningPlanAt = (tl: PlanTimeline, time: number) =>
  earnsAt(tl.standing, time) ? planAt(tl, time) : null

/**
 * Closes a brand's period (a month that has ended) once, in one transaction: rows of earlier months still
 * open join it; a tiered plan's adjustment and sub-affiliate overrides are written; each affiliate with rows
 * gets a statement. The closed period's primary key makes a second close (another instance, a repeat) a
 * 409, never a second statement.
 */
export async function closePeriod(ctx: AffiliateCtx, brandId: number, staffId: number, period: string) {
  if (!PERIOD.test(period)) throw invalid('period: a month, YYYY-MM')
  const now = ctx.clock.now()
  if (periodEnd(period) > now) throw refuse('PERIOD_NOT_ENDED', `${period} has not ended yet`)
  const end = periodEnd(period)
  return ctx.db.transaction(async (tx) => {
    const closed = await closedThrough(tx, brandId)
    if (closed && period <= closed) throw refuse('PERIOD_CLOSED', `${period} is closed (through ${closed})`)
    await tx
      .insert(commissionPeriods)
      .values({ brandId, period, closedAt: now, closedBy: staffId, pricing: PRICING_SPLIT_MONTHS })
    // months before it that nobody closed: their rows are this period's
    await tx
      .update(commissions)
      .set({ period, updatedAt: now })
      .where(
        and(
          eq(commissions.brandId, brandId),
          lt(commissions.period, period),
          closed ? gt(commissions.period, closed) : undefined,
        ),
      )
    const sums = await tx
      .select({
        affiliateId: commissions.affiliateId,
        currency: commissions.currency,
        kind: commissions.kind,
        planId: commissions.planId,
        planVersion: commissions.planVersion,
        month: eventMonth,
        amount: sql<number>`sum(${commissions.amountMinor})`,
        basis: sql<number>`sum(${commissions.basisMinor})`,
        rows: sql<number>`count(*)`,
      })
      .from(commissions)
      .where(and(eq(commissions.brandId, brandId), eq(commissions.period, period)))
      .groupBy(
        commissions.affiliateId,
        commissions.currency,
        commissions.kind,
        commissions.planId,
        commissions.planVersion,
        eventMonth,
      )
    const plans = await brandPlans(tx, brandId)
    const { timelineOf, termsOf } = plans
    const list = new Map<number, AffiliatePeriod & { rows: Map<string, number> }>()
    const entry = (affiliateId: number) => {
      let a = list.get(affiliateId)
      if (!a) {
        a = {
          affiliateId,
          parentId: null,
          plan: earningPlanAt(timelineOf(affiliateId), end - 1),
          revshare: [],
          volume: 0,
          customers: 0,
          totals: new Map(),
          rows: new Map(),
        }
        list.set(affiliateId, a)
      }
      return a
    }
    for (const s of sums) {
      const a = entry(s.affiliateId)
      const amount = Number(s.amount)
      a.totals.set(s.currency, (a.totals.get(s.currency) ?? 0) + amount)
      a.rows.set(s.currency, (a.rows.get(s.currency) ?? 0) + Number(s.rows))
      const terms = termsOf(s.planId, s.planVersion)
      if ((s.kind === 'revshare' || s.kind === 'revshare_reversal') && terms) {
        // a tiered version's rows of each month nobody closed are priced apart, on that month's metric
        const month = terms.type === 'tiered_revshare' ? countsIn(s.month, firstOpen(closed)) : undefined
        const g = groupIn(a, s.planId, s.planVersion, terms, s.currency, month)
        g.basis += Number(s.basis)
        g.paid += amount
      }
    }
    await splitJoinedMonths(tx, brandId, period, closed, plans, list)
    await repriceClosedMonths(tx, brandId, period, closed, plans, list, entry)
    await addTierMetrics(tx, brandId, period, list, timelineOf)
    await addJoinedMetrics(tx, brandId, period, list, timelineOf)
    await addTakeBacks(tx, brandId, period, list, entry)
    await addRecruiters(tx, brandId, list, entry)
    const closing = closeRows(period, [...list.values()])
    // what a period's rounding row (commission-ledger.ts) still misses joins that row
    const rounded = await joinRoundingRows(
      tx,
      brandId,
      period,
      now,
      closing.filter((r) => r.kind === 'revshare'),
      entry,
    )
    const added = closing.filter((r) => !rounded.has(r))
    if (added.length > 0)
      await tx.insert(commissions).values(
        added.map((r) => ({
          brandId,
          affiliateId: r.affiliateId,
          customerId: 0,
          sourceAffiliateId: r.sourceAffiliateId,
          kind: r.kind,
          key: r.key,
          period,
          amountMinor: r.amountMinor,
          currency: r.currency,
          basisMinor: r.basisMinor,
          rateBp: r.rateBp,
          planId: r.planId,
          planVersion: r.planVersion,
          corrects: r.corrects ?? '',
          // a joined month's own row (its tier, its rounding) is of that month: a later close that prices
          // the period again splits it by event month, and files it there
          eventTime: r.month ? periodEnd(r.month) - 1 : end - 1,
          createdAt: now,
          updatedAt: now,
        })),
      )
    for (const r of added) {
      const a = entry(r.affiliateId)
      a.totals.set(r.currency, (a.totals.get(r.currency) ?? 0) + r.amountMinor)
      a.rows.set(r.currency, (a.rows.get(r.currency) ?? 0) + 1)
    }
    const made = [...list.values()]
      .filter((a) => a.rows.size > 0)
      .map((a) => {
        const totals: Total[] = [...a.totals.entries()]
          .sort(([x], [y]) => x.localeCompare(y))
          .map(([currency, amount]) => ({ currency, amount_minor: amount, rows: a.rows.get(currency) ?? 0 }))
        return {
          brandId,
          affiliateId: a.affiliateId,
          period,
          totals: JSON.stringify(totals),
          rows: totals.reduce((n, t) => n + t.rows, 0),
          createdAt: now,
        }
      })
    for (let i = 0; i < made.length; i += 500) await tx.insert(statements).values(made.slice(i, i + 500))
    // the running RevShare totals (commission-ledger.ts) are of open periods: what this close summed is done
    await tx
      .delete(revshareTotals)
      .where(and(eq(revshareTotals.brandId, brandId), lte(revshareTotals.period, period)))
    return { period, closed_time: Math.floor(now / 1000), statements: made.length, rows_added: added.length }
  })
}

type ClosingRow = ReturnType<typeof closeRows>[number]

/**
 * Adds each closing rounding row (`closing`: the close's `revshare` rows) to the period's rounding row it
 * completes, when the period has one (commission-ledger.ts writes it while the period is open), and to the
 * affiliate's totals: it is updated, or deleted when nothing is left of it. Those rows are read, and written,
 * a page of 500 at a time (a close of thousands of partners is a few statements, not one or two each: at the
 * edge a close's transaction has the invocation's 1,000 subrequests). Answers the rows that joined one; the
 * others are the close's to insert.
 */
async function joinRoundingRows(
  tx: Tx,
  brandId: number,
  period: string,
  now: number,
  closing: ClosingRow[],
  entry: (id: number) => AffiliatePeriod & { rows: Map<string, number> },
) {
  const rounded = new Set<ClosingRow>()
  if (closing.length === 0) return rounded
  const at = (affiliateId: number, key: string, currency: string) => `${affiliateId}:${currency}:${key}`
  // the period's row of each (affiliate, key, currency): one at most (affiliate_commissions_key)
  const have = new Map<string, { id: number; amount: number }>()
  for (const page of chunks(closing, 500)) {
    const wanted = new Set(page.map((r) => at(r.affiliateId, r.key, r.currency)))
    for (const h of await tx
      .select({
        id: commissions.id,
        affiliateId: commissions.affiliateId,
        key: commissions.key,
        currency: commissions.currency,
        amount: commissions.amountMinor,
      })
      .from(commissions)
      .where(
        and(
          eq(commissions.brandId, brandId),
          eq(commissions.period, period),
          inArray(commissions.affiliateId, [...new Set(page.map((r) => r.affiliateId))]),
          inArray(commissions.key, [...new Set(page.map((r) => r.key))]),
        ),
      )) {
      const k = at(h.affiliateId, h.key, h.currency)
      if (wanted.has(k)) have.set(k, { id: h.id, amount: h.amount })
    }
  }
  const amountOf = new Map<number, number>()
  const gone: number[] = []
  for (const r of closing) {
    const k = at(r.affiliateId, r.key, r.currency)
    const h = have.get(k)
    if (!h) continue
    rounded.add(r)
    const a = entry(r.affiliateId)
    a.totals.set(r.currency, (a.totals.get(r.currency) ?? 0) + r.amountMinor)
    h.amount += r.amountMinor
    if (h.amount === 0) {
      // nothing left of it: deleted (a later row of the same key finds none, and is inserted)
      have.delete(k)
      amountOf.delete(h.id)
      gone.push(h.id)
      a.rows.set(r.currency, (a.rows.get(r.currency) ?? 0) - 1)
    } else amountOf.set(h.id, h.amount)
  }
  for (const page of chunks(gone, 500))
    await tx.delete(commissions).where(and(eq(commissions.brandId, brandId), inArray(commissions.id, page)))
  for (const page of chunks([...amountOf], 500))
    await tx
      .update(commissions)
      .set({
        amountMinor: sql<number>`case ${commissions.id} ${sql.join(
          page.map(([id, amount]) => sql`when ${id} then ${amount}`),
          sql` `,
        )} end`,
        updatedAt: now,
      })
      .where(
        and(
          eq(commissions.brandId, brandId),
          inArray(
            commissions.id,
            page.map(([id]) => id),
          ),
        ),
      )
  return rounded
}

/**
 * A close that takes in earlier months nobody closed prices a tiered version's rows of each month on that
 * month's own metric (`countsIn`). A reversal counts against its deposit's month (as when that month is
 * closed first, and as the plan preview counts it): one in a month other than its deposit's, both joined
 * to this period, moves there.
 */
async function splitJoinedMonths(
  tx: Tx,
  brandId: number,
  period: string,
  closed: string | null,
  plans: BrandPlans,
  list: Map<number, AffiliatePeriod>,
) {
  const joined = [...list.values()]
    .filter((a) => a.revshare.some((g) => g.month !== undefined && g.month !== period))
    .map((a) => a.affiliateId)
  if (joined.length === 0) return
  const planIds = [...new Set([...plans.tiered.keys()].map((k) => Number(k.split('.')[0])))]
  const first = firstOpen(closed)
  for (const r of await reversalsIn(tx, brandId, period, period, planIds, new Set([period]), joined)) {
    const terms = plans.tiered.get(`${r.planId}.${r.planVersion}`)
    const a = list.get(r.affiliateId)
    if (!terms || !a || r.deposit?.period !== period) continue
    const own = countsIn(periodOf(r.eventTime), first)
    const to = countsIn(periodOf(r.deposit.eventTime), first)
    if (own === to) continue
    const from = groupIn(a, r.planId, r.planVersion, terms, r.currency, own)
    from.basis -= r.basisMinor
    from.paid -= r.amountMinor
    const into = groupIn(a, r.planId, r.planVersion, terms, r.currency, to)
    into.basis += r.basisMinor
    into.paid += r.amountMinor
  }
}

/** The metric of each earlier month nobody closed whose tiered rows joined the period (`months`). */
async function addJoinedMetrics(
  tx: Tx,
  brandId: number,
  period: string,
  list: Map<number, AffiliatePeriod>,
  timelineOf: (affiliateId: number) => PlanTimeline,
) {
  const byMonth = new Map<
    string,
    Map<number, Pick<AffiliatePeriod, 'affiliateId' | 'revshare' | 'volume' | 'customers'>>
  >()
  for (const a of list.values())
    for (const g of a.revshare) {
      if (g.month === undefined || g.month === period) continue
      const of = byMonth.get(g.month) ?? byMonth.set(g.month, new Map()).get(g.month)!
      const m = of.get(a.affiliateId) ?? { affiliateId: a.affiliateId, revshare: [], volume: 0, customers: 0 }
      m.revshare.push(g)
      of.set(a.affiliateId, m)
    }
  for (const [month, of] of byMonth) {
    await addTierMetrics(tx, brandId, month, of, timelineOf)
    for (const m of of.values()) {
      const a = list.get(m.affiliateId)!
      a.months = (a.months ?? new Map()).set(month, { volume: m.volume, customers: m.customers })
    }
  }
}

/**
 * The month's metric of each tiered plan: lots its customers closed, first deposits they made, while it
 * earned (a suspension's activity raises no tier: standing.ts). A first deposit counts as the CPA would pay
 * and keep it (domain/commissions.ts `firstDepositCounts`): one voided by a refund or chargeback within the
 * hold days, or that does not qualify, does not.
 */
async function addTierMetrics(
  tx: Tx,
  brandId: number,
  period: string,
  list: Map<number, Pick<AffiliatePeriod, 'affiliateId' | 'revshare' | 'volume' | 'customers'>>,
  timelineOf: (affiliateId: number) => PlanTimeline,
) {
  const tiered = [...list.values()].filter((a) => a.revshare.some((g) => g.terms.type === 'tiered_revshare'))
  if (tiered.length === 0) return
  const from = periodStart(period)
  const to = periodEnd(period)
  const add = (m: Map<number, { volume: number; customers: number }>) => {
    for (const [id, x] of m) {
      const a = list.get(id)
      if (!a) continue
      a.volume += x.volume
      a.customers += x.customers
    }
  }
  // only a plan counting customers needs each first deposit's facts
  const byCustomers = new Set(
    tiered
      .filter((a) =>
        a.revshare.some((g) => g.terms.type === 'tiered_revshare' && g.terms.tier_metric === 'customers'),
      )
      .map((a) => a.affiliateId),
  )
  const metrics = (ids: number[], x: number, y: number) =>
    tierMetrics(
      tx,
      brandId,
      ids,
      x,
      y,
      byCustomers,
      (id, time) => planAt(timelineOf(id), time)?.terms ?? null,
    )
  // most never had their standing changed: one read for all of them over the whole month
  const standings = new Map(tiered.map((a) => [a.affiliateId, timelineOf(a.affiliateId).standing]))
  const always = tiered.filter((a) => !everChanged(standings.get(a.affiliateId)!)).map((a) => a.affiliateId)
  if (always.length > 0) add(await metrics(always, from, to))
  for (const a of tiered) {
    const standing = standings.get(a.affiliateId)!
    if (!everChanged(standing)) continue
    for (const [x, y] of earningSpans(standing, from, to)) add(await metrics([a.affiliateId], x, y))
  }
}

/**
 * Lots closed on real accounts and first deposits of the affiliates' customers in [from, to); first
 * deposits only of the affiliates in `byCustomers`, each counted when it stands under the plan in effect at
 * it (`termsAt`).
 */
async function tierMetrics(
  tx: Tx,
  brandId: number,
  ids: number[],
  from: number,
  to: number,
  byCustomers: ReadonlySet<number>,
  termsAt: (affiliateId: number, time: number) => PlanTerms | null,
) {
  const volumes = await tx
    .select({
      affiliateId: referredCustomers.affiliateId,
      volume: sql<number>`sum(${conversionFacts.volume})`,
    })
    .from(conversionFacts)
    .innerJoin(referredCustomers, eq(referredCustomers.customerId, conversionFacts.customerId))
    .where(
      and(
        eq(referredCustomers.brandId, brandId),
        inArray(referredCustomers.affiliateId, ids),
        eq(conversionFacts.kind, 'trade'),
        // lots on real accounts (a demo trade's fact has no currency)
        ne(conversionFacts.currency, ''),
        gte(conversionFacts.eventTime, from),
        lt(conversionFacts.eventTime, to),
      ),
    )
    .groupBy(referredCustomers.affiliateId)
  const out = new Map<number, { volume: number; customers: number }>()
  const of = (id: number) => out.get(id) ?? out.set(id, { volume: 0, customers: 0 }).get(id)!
  for (const v of volumes) of(v.affiliateId).volume += Number(v.volume)
  const counting = ids.filter((id) => byCustomers.has(id))
  if (counting.length === 0) return out
  const firsts = await tx
    .select({ affiliateId: conversions.affiliateId, customerId: conversions.customerId })
    .from(conversions)
    .where(
      and(
        eq(conversions.brandId, brandId),
        inArray(conversions.affiliateId, counting),
        eq(conversions.kind, 'first_deposit'),
        gte(conversions.eventTime, from),
        lt(conversions.eventTime, to),
      ),
    )
  for (let i = 0; i < firsts.length; i += 500) {
    const chunk = firsts.slice(i, i + 500)
    const facts = await tx
      .select()
      .from(conversionFacts)
      .where(
        and(
          inArray(
            conversionFacts.customerId,
            chunk.map((c) => c.customerId),
          ),
          inArray(conversionFacts.kind, ['deposit', 'reversal', 'kyc']),
        ),
      )
    const factsOf = new Map<number, FactRow[]>()
    for (const f of facts) factsOf.set(f.customerId, [...(factsOf.get(f.customerId) ?? []), f as FactRow])
    for (const c of chunk) {
      const list = factsOf.get(c.customerId) ?? []
      const terms = (time: number) => termsAt(c.affiliateId, time)
      let counted = firstDepositCounts(list, terms)
      const lots = counted ? terms(counted.first.eventTime)?.qualify : undefined
      if (counted && lots?.min_centilots) {
        // the plan asks for lots after the first deposit: the trades of its window
        const start = counted.first.eventTime
        const trades = await tx
          .select()
          .from(conversionFacts)
          .where(
            and(
              eq(conversionFacts.customerId, c.customerId),
              eq(conversionFacts.kind, 'trade'),
              between(conversionFacts.eventTime, start, start + (lots.within_days ?? 0) * 86_400_000),
            ),
          )
        counted = firstDepositCounts([...list, ...(trades as FactRow[])], terms)
      }
      if (counted?.counts) of(c.affiliateId).customers++
    }
  }
  return out
}

type Reversal = Pick<
  typeof commissions.$inferSelect,
  | 'affiliateId'
  | 'key'
  | 'currency'
  | 'planId'
  | 'planVersion'
  | 'period'
  | 'basisMinor'
  | 'amountMinor'
  | 'eventTime'
> & {
  /** the first row of the deposit it reverses: the period that paid it and when its deposit was made */
  deposit?: { period: string; eventTime: number }
  /**
   * the month it counts against: the period that paid the deposit it reverses, when that one is earlier and
   * both were priced under this rule (`PRICING_BY_DEPOSIT_MONTH`); its own period otherwise
   */
  reverses: string
}

/**
 * A refund or chargeback within the hold that comes after its deposit's month closed still moves that month's
 * tier (issue: a late chargeback kept the tier it raised). Each closed month whose hold is still open at this
 * close (`holdOpen`: a deposit of it may still be reversed within the hold since the last close) is priced
 * again with the facts known now, in `closeRows`; its difference is a tier adjustment of this period naming
 * the month. A reversal row of a deposit paid in a closed month counts against that month's tier, not this
 * period's (its base-rate row stays where it was written), so a chargeback never moves two tiers.
 *
 * Only months closed under this rule (`affiliate_periods.pricing` at least `PRICING_BY_DEPOSIT_MONTH`) are
 * priced again or take a reversal: a month closed by a release before counted a reversal of an earlier month's
 * deposit in its own tier, so it is kept as it was priced, and a reversal of one of its deposits stays in
 * the month it falls in (at that month's own close and when that month is priced again), as before.
 *
 * It runs inside the close's transaction, so it reads only what may have moved: the months within the hold
 * of a tiered plan version (its rows only: by plan), and of those only the affiliates with a reversal of a
 * closed month's deposit in this period, or whose customers have facts since the last closed month that move
 * a tier (reversals; KYC approvals and trades when a tiered plan counts qualified first deposits). Any other
 * affiliate's closed months price as they were paid: nothing to write.
 */
async function repriceClosedMonths(
  tx: Tx,
  brandId: number,
  period: string,
  closed: string | null,
  plans: BrandPlans,
  list: Map<number, AffiliatePeriod>,
  entry: (id: number) => AffiliatePeriod,
) {
  const tiered = plans.tiered
  if (!closed || tiered.size === 0) return
  const since = periodEnd(closed)
  const tieredTerms = (planId: number, version: number) => tiered.get(`${planId}.${version}`) ?? null
  const planIds = [...new Set([...tiered.keys()].map((k) => Number(k.split('.')[0])))]
  const longest = Math.max(...[...tiered.values()].map((t) => t.hold_days))
  // the closed months priced under this rule, and the one closing: only those are priced again, and a
  // reversal moves to its deposit's month only when both are (a month closed before kept it where it fell)
  const closedList = await tx
    .select({ period: commissionPeriods.period, pricing: commissionPeriods.pricing })
    .from(commissionPeriods)
    .where(and(eq(commissionPeriods.brandId, brandId), lt(commissionPeriods.period, period)))
    .orderBy(commissionPeriods.period)
  const byRule = new Set(closedList.filter((r) => r.pricing >= PRICING_BY_DEPOSIT_MONTH).map((r) => r.period))
  // the first month open when each closed period's rows were written (the close before it, and one): a
  // period closed before months were split (`PRICING_SPLIT_MONTHS`) priced the months that joined it as
  // one, under its own keys (`tier:<period>:…`), so all its rows count in it (its first month is itself)
  const firstOf = new Map(
    closedList.map((r, i) => [
      r.period,
      r.pricing >= PRICING_SPLIT_MONTHS ? firstOpen(closedList[i - 1]?.period) : r.period,
    ]),
  )
  firstOf.set(period, firstOpen(closed))
  const monthIn = (q: string, time: number) => countsIn(periodOf(time), firstOf.get(q) ?? '')
  /** the month of a reversal's deposit in the period it counts against (the reversal's own when it moves none) */
  const monthOfDeposit = (r: Reversal) =>
    r.deposit && r.deposit.period === r.reverses
      ? monthIn(r.reverses, r.deposit.eventTime)
      : monthIn(r.period, r.eventTime)
  const months = new Set([...byRule].filter((q) => holdOpen(q, longest, since)))
  byRule.add(period)
  // this period's reversals of deposits paid in a closed month (a late one may reach past the window)
  const ours = await reversalsIn(tx, brandId, period, period, planIds, byRule)
  const here = ours.filter((r) => r.reverses < period && tieredTerms(r.planId, r.planVersion))
  for (const r of here) months.add(r.reverses)
  if (months.size === 0) return
  const monthList = [...months].sort()
  const lowest = monthList[0]!
  // who may have moved: an affiliate with such a reversal here, or whose customers have facts since
  const changed = new Set(here.map((r) => r.affiliateId))
  const onTiered = (
    await tx
      .selectDistinct({ affiliateId: commissions.affiliateId })
      .from(commissions)
      .where(
        and(
          eq(commissions.brandId, brandId),
          inArray(commissions.planId, planIds),
          inArray(commissions.period, monthList),
          inArray(commissions.kind, ['revshare', 'revshare_reversal']),
        ),
      )
  )
    .map((r) => r.affiliateId)
    .filter((id) => !changed.has(id))
  const byCustomers = [...tiered.values()].filter((t) => t.tier_metric === 'customers')
  const kinds = [
    'reversal',
    ...(byCustomers.some((t) => t.qualify?.kyc_approved) ? ['kyc'] : []),
    ...(byCustomers.some((t) => (t.qualify?.min_centilots ?? 0) > 0) ? ['trade'] : []),
  ]
  for (const page of chunks(onTiered, 500)) {
    const moved = await tx
      .selectDistinct({ affiliateId: referredCustomers.affiliateId })
      .from(referredCustomers)
      .innerJoin(conversionFacts, eq(conversionFacts.customerId, referredCustomers.customerId))
      .where(
        and(
          eq(referredCustomers.brandId, brandId),
          inArray(referredCustomers.affiliateId, page),
          inArray(conversionFacts.kind, kinds),
          gte(conversionFacts.eventTime, since),
        ),
      )
    for (const m of moved) changed.add(m.affiliateId)
  }
  if (changed.size === 0) return
  const affiliates = [...changed]
  const reversals = [
    ...(await reversalsIn(tx, brandId, lowest, closed, planIds, byRule, affiliates)),
    ...ours.filter((r) => changed.has(r.affiliateId)),
  ]
  const groupId = (
    affiliateId: number,
    q: string,
    month: string,
    planId: number,
    version: number,
    currency: string,
  ) => `${affiliateId}:${q}:${month}:${planId}.${version}:${currency}`
  // what each closed month's tiered groups hold now: its rows, less its reversals of earlier months, plus
  // the reversals of its deposits written since, plus the tier adjustments paid on it; a closed period that
  // took in months nobody closed holds a group per such month (`countsIn`), as its close priced them
  type Group = { affiliateId: number; period: string; group: RevshareGroup & { month: string } }
  const groups = new Map<string, Group>()
  const add = (
    affiliateId: number,
    q: string,
    month: string,
    planId: number,
    version: number,
    currency: string,
  ) => {
    const id = groupId(affiliateId, q, month, planId, version, currency)
    let g = groups.get(id)
    const terms = tieredTerms(planId, version)
    if (!g && terms) {
      g = {
        affiliateId,
        period: q,
        group: { planId, version, terms, currency, basis: 0, paid: 0, month },
      }
      groups.set(id, g)
    }
    return g?.group
  }
  for (const page of chunks(affiliates, 500)) {
    const sums = await tx
      .select({
        affiliateId: commissions.affiliateId,
        period: commissions.period,
        currency: commissions.currency,
        planId: commissions.planId,
        planVersion: commissions.planVersion,
        month: eventMonth,
        amount: sql<number>`sum(${commissions.amountMinor})`,
        basis: sql<number>`sum(${commissions.basisMinor})`,
      })
      .from(commissions)
      .where(
        and(
          eq(commissions.brandId, brandId),
          inArray(commissions.planId, planIds),
          inArray(commissions.period, monthList),
          inArray(commissions.affiliateId, page),
          inArray(commissions.kind, ['revshare', 'revshare_reversal']),
        ),
      )
      .groupBy(
        commissions.affiliateId,
        commissions.period,
        commissions.currency,
        commissions.planId,
        commissions.planVersion,
        eventMonth,
      )
    for (const r of sums) {
      const month = countsIn(r.month, firstOf.get(r.period) ?? '')
      const g = add(r.affiliateId, r.period, month, r.planId, r.planVersion, r.currency)
      if (!g) continue
      g.basis += Number(r.basis)
      g.paid += Number(r.amount)
    }
  }
  for (const r of reversals) {
    // one moves to its deposit's month: a closed one, or the month nobody closed it joined with its period
    const own = monthIn(r.period, r.eventTime)
    const to_ = monthOfDeposit(r)
    if (r.reverses === r.period && to_ === own) continue
    const from = groups.get(groupId(r.affiliateId, r.period, own, r.planId, r.planVersion, r.currency))
    if (from) {
      from.group.basis -= r.basisMinor
      from.group.paid -= r.amountMinor
    }
    const to = groups.get(groupId(r.affiliateId, r.reverses, to_, r.planId, r.planVersion, r.currency))
    if (to) {
      to.group.basis += r.basisMinor
      to.group.paid += r.amountMinor
    }
  }
  const byKey = new Map(
    [...groups.values()].map((g) => [
      `${g.affiliateId}:${tierKey(g.group.month, g.group.planId, g.group.version, g.group.currency)}`,
      g.group,
    ]),
  )
  for (const page of chunks(affiliates, 500)) {
    const paidTiers = await amountsOf(
      tx,
      brandId,
      inArray(commissions.planId, planIds),
      gte(commissions.period, lowest),
      lte(commissions.period, period),
      inArray(commissions.affiliateId, page),
      eq(commissions.kind, 'tier_adjustment'),
    )
    for (const t of paidTiers) {
      const g = byKey.get(`${t.affiliateId}:${t.key}`)
      if (g && g.currency === t.currency) g.paid += t.amount
    }
  }
  // this period's tier is priced without the reversals that count against a closed month
  const movedHere = new Set<string>()
  for (const r of here) {
    movedHere.add(groupId(r.affiliateId, r.reverses, monthOfDeposit(r), r.planId, r.planVersion, r.currency))
    const a = list.get(r.affiliateId)
    const month = countsIn(periodOf(r.eventTime), firstOpen(closed))
    const g = a?.revshare.find(
      (x) =>
        x.planId === r.planId &&
        x.version === r.planVersion &&
        x.currency === r.currency &&
        x.month === month,
    )
    if (!g) continue
    g.basis -= r.basisMinor
    g.paid -= r.amountMinor
  }
  const { timelineOf } = plans
  // per closed period and month of its rows (the period's own, or one nobody closed that joined it)
  const perMonth = new Map<string, Group[]>()
  for (const [id, g] of groups) {
    // the month is priced again while its version's hold is open, or when a reversal of it came here
    if (!movedHere.has(id) && !holdOpen(g.period, g.group.terms.hold_days, since)) continue
    const k = `${g.period}:${g.group.month}`
    perMonth.set(k, [...(perMonth.get(k) ?? []), g])
  }
  for (const k of [...perMonth.keys()].sort()) {
    const [q, month] = k.split(':') as [string, string]
    const of = new Map<number, ClosedMonth & { affiliateId: number; revshare: RevshareGroup[] }>()
    for (const g of perMonth.get(k) ?? []) {
      let m = of.get(g.affiliateId)
      if (!m) {
        const list: RevshareGroup[] = []
        // `revshare` is what the metrics read (which plans count customers); `groups` what is priced
        m = { affiliateId: g.affiliateId, period: q, volume: 0, customers: 0, groups: list, revshare: list }
        of.set(g.affiliateId, m)
      }
      m.groups.push(g.group)
    }
    await addTierMetrics(tx, brandId, month, of, timelineOf)
    for (const m of of.values()) {
      const a = entry(m.affiliateId)
      a.reprice = [
        ...(a.reprice ?? []),
        {
          period: q,
          ...(month === q ? {} : { month }),
          volume: m.volume,
          customers: m.customers,
          groups: m.groups,
        },
      ]
    }
  }
}

/** The first period each of an affiliate's ledger keys was written in (a deposit's, a CPA's: what paid it). */
async function firstPeriods(tx: Tx, brandId: number, affiliateId: number, keys: string[]) {
  const first = new Map<string, string>()
  for (const page of chunks(keys, 500)) {
    const found = await tx
      .select({ key: commissions.key, period: sql<string>`min(${commissions.period})` })
      .from(commissions)
      .where(
        and(
          eq(commissions.brandId, brandId),
          eq(commissions.affiliateId, affiliateId),
          inArray(commissions.key, page),
        ),
      )
      .groupBy(commissions.key)
    for (const f of found) first.set(f.key, f.period)
  }
  return first
}

/**
 * The first row of each (affiliate, ledger key) pair, by `<affiliate>:<key>`: the period it was written in
 * and the earliest event of that period's rows (a deposit's: when it was made). The pairs are read a page
 * of 500 at a time (those affiliates and those keys, the rows of other pairs dropped here): a close with
 * thousands of partners holding a reversal is a few statements, not one each (at the edge a close's
 * transaction has the invocation's 1,000 subrequests).
 */
async function firstRows(tx: Tx, brandId: number, pairs: { affiliateId: number; key: string }[]) {
  const at = (affiliateId: number, key: string) => `${affiliateId}:${key}`
  const first = new Map<string, { period: string; eventTime: number }>()
  for (const page of chunks(pairs, 500)) {
    const wanted = new Set(page.map((p) => at(p.affiliateId, p.key)))
    for (const f of await tx
      .select({
        affiliateId: commissions.affiliateId,
        key: commissions.key,
        period: commissions.period,
        eventTime: commissions.eventTime,
      })
      .from(commissions)
      .where(
        and(
          eq(commissions.brandId, brandId),
          inArray(commissions.affiliateId, [...new Set(page.map((p) => p.affiliateId))]),
          inArray(commissions.key, [...new Set(page.map((p) => p.key))]),
        ),
      )) {
      const k = at(f.affiliateId, f.key)
      if (!wanted.has(k)) continue
      const have = first.get(k)
      if (!have || f.period < have.period || (f.period === have.period && f.eventTime < have.eventTime))
        first.set(k, { period: f.period, eventTime: f.eventTime })
    }
  }
  return first
}

/**
 * The RevShare reversal rows of periods [from, to] (of those plans, and those affiliates when named), each
 * with the month it counts against: the first period that paid the deposit it reverses (same customer and
 * reference), when earlier than its own and both are `byRule` (priced under this rule); its own otherwise.
 */
async function reversalsIn(
  tx: Tx,
  brandId: number,
  from: string,
  to: string,
  planIds: number[],
  byRule: ReadonlySet<string>,
  affiliates?: number[],
): Promise<Reversal[]> {
  const rows: Omit<Reversal, 'reverses' | 'deposit'>[] = []
  for (const chunk of affiliates ? chunks(affiliates, 500) : [undefined])
    rows.push(
      ...(await tx
        .select({
          affiliateId: commissions.affiliateId,
          key: commissions.key,
          currency: commissions.currency,
          planId: commissions.planId,
          planVersion: commissions.planVersion,
          period: commissions.period,
          basisMinor: commissions.basisMinor,
          amountMinor: commissions.amountMinor,
          eventTime: commissions.eventTime,
        })
        .from(commissions)
        .where(
          and(
            eq(commissions.brandId, brandId),
            inArray(commissions.planId, planIds),
            gte(commissions.period, from),
            lte(commissions.period, to),
            chunk ? inArray(commissions.affiliateId, chunk) : undefined,
            eq(commissions.kind, 'revshare_reversal'),
          ),
        )),
    )
  const depositKey = (key: string) => key.replace(':rev:reversal:', ':rev:deposit:')
  // each (affiliate, deposit key) once, all read a page of 500 pairs at a time
  const pairs = new Map<string, { affiliateId: number; key: string }>()
  for (const r of rows) {
    const key = depositKey(r.key)
    pairs.set(`${r.affiliateId}:${key}`, { affiliateId: r.affiliateId, key })
  }
  const paidIn = await firstRows(tx, brandId, [...pairs.values()])
  return rows.map((r) => {
    const deposit = paidIn.get(`${r.affiliateId}:${depositKey(r.key)}`)
    const paid = deposit?.period
    const moves = paid && paid < r.period && byRule.has(paid) && byRule.has(r.period)
    return { ...r, deposit, reverses: moves ? paid : r.period }
  })
}

/** The brand's commission rows matching `conds`: whose, which key, the currency and the amount. */
const amountsOf = (tx: Tx, brandId: number, ...conds: SQL[]) =>
  tx
    .select({
      affiliateId: commissions.affiliateId,
      key: commissions.key,
      currency: commissions.currency,
      amount: commissions.amountMinor,
    })
    .from(commissions)
    .where(and(eq(commissions.brandId, brandId), ...conds))

/**
 * What a recruit's negative row takes back (closeRows): each affiliate's negative rows of the period with the
 * period whose earning each reverses (the first period of the row it reverses: a CPA's, a deposit's, a
 * corrected row's own key), and the overrides paid on those periods (and on the closed months a tier
 * correction prices again), with the recruiter each was paid to, whoever recruits the recruit now (a recruit
 * moved to another recruiter, or to none, still takes back from the one paid): their rate and what each
 * still holds, per `sub:<recruit>:<period>:<currency>`. The recruiter paid joins the close.
 */
async function addTakeBacks(
  tx: Tx,
  brandId: number,
  period: string,
  list: Map<number, AffiliatePeriod>,
  entry: (id: number) => AffiliatePeriod,
) {
  const negative = await amountsOf(
    tx,
    brandId,
    eq(commissions.period, period),
    lt(commissions.amountMinor, 0),
    ne(commissions.kind, 'sub_affiliate'),
  )
  // the row each reverses: a CPA's reversal its CPA, a deposit's reversal its deposit, a correction its key
  const original = (key: string) =>
    key.endsWith(':cpa:reversed')
      ? key.slice(0, -':reversed'.length)
      : key.replace(':rev:reversal:', ':rev:deposit:')
  const keysOf = new Map<number, Set<string>>()
  for (const r of negative)
    keysOf.set(r.affiliateId, (keysOf.get(r.affiliateId) ?? new Set()).add(original(r.key)))
  const first = await firstPeriodsOf(tx, brandId, keysOf)
  // the overrides they may take back, by the period that paid them
  const wanted = new Map<string, Set<string>>()
  const want = (recruitId: number, q: string, currency: string) => {
    if (q >= period) return
    wanted.set(q, (wanted.get(q) ?? new Set()).add(subKey(recruitId, q, currency)))
  }
  const negativesOf = new Map<number, NonNullable<AffiliatePeriod['negatives']>>()
  for (const r of negative) {
    const reverses = first.get(`${r.affiliateId}:${original(r.key)}`) ?? period
    if (reverses >= period) continue
    negativesOf.set(r.affiliateId, [
      ...(negativesOf.get(r.affiliateId) ?? []),
      { currency: r.currency, amount: r.amount, reverses },
    ])
    want(r.affiliateId, reverses, r.currency)
  }
  for (const a of list.values())
    for (const m of a.reprice ?? []) for (const g of m.groups) want(a.affiliateId, m.period, g.currency)
  if (wanted.size === 0) return
  for (const [id, negatives] of negativesOf) entry(id).negatives = negatives
  type Override = { planId: number; version: number; bp: number; held: number }
  const paidTo = new Map<number, Map<string, Override>>()
  // the override a period paid: its own row (`sub:<recruit>:<period>:…` written in that period)
  for (const [q, keys] of wanted)
    for (const page of chunks([...keys], 500))
      for (const r of await tx
        .select({
          affiliateId: commissions.affiliateId,
          key: commissions.key,
          bp: commissions.rateBp,
          planId: commissions.planId,
          version: commissions.planVersion,
        })
        .from(commissions)
        .where(
          and(
            eq(commissions.brandId, brandId),
            eq(commissions.period, q),
            eq(commissions.kind, 'sub_affiliate'),
            inArray(commissions.key, page),
            gt(commissions.amountMinor, 0),
          ),
        )) {
        const of = paidTo.get(r.affiliateId) ?? paidTo.set(r.affiliateId, new Map()).get(r.affiliateId)!
        of.set(r.key, { planId: r.planId, version: r.version, bp: r.bp, held: 0 })
      }
  // what each still holds: that row and the take-backs written against it since
  for (const [holderId, overrides] of paidTo) {
    for (const page of chunks([...overrides.keys()], 500))
      for (const r of await tx
        .select({ key: commissions.key, amount: commissions.amountMinor })
        .from(commissions)
        .where(
          and(
            eq(commissions.brandId, brandId),
            eq(commissions.affiliateId, holderId),
            eq(commissions.kind, 'sub_affiliate'),
            inArray(commissions.key, page),
          ),
        )) {
        const o = overrides.get(r.key)
        if (o) o.held += r.amount
      }
    entry(holderId).overrides = overrides
  }
}

/** `firstPeriods` of several affiliates, by `<affiliate>:<key>`, in pages of about 500 keys. */
async function firstPeriodsOf(tx: Tx, brandId: number, keysOf: Map<number, Set<string>>) {
  const first = new Map<string, string>()
  let ids: number[] = []
  let keys = new Set<string>()
  const flush = async () => {
    if (ids.length === 0) return
    const found = await tx
      .select({
        affiliateId: commissions.affiliateId,
        key: commissions.key,
        period: sql<string>`min(${commissions.period})`,
      })
      .from(commissions)
      .where(
        and(
          eq(commissions.brandId, brandId),
          inArray(commissions.affiliateId, ids),
          inArray(commissions.key, [...keys]),
        ),
      )
      .groupBy(commissions.affiliateId, commissions.key)
    for (const f of found) first.set(`${f.affiliateId}:${f.key}`, f.period)
    ids = []
    keys = new Set()
  }
  for (const [id, set] of keysOf) {
    if (set.size > 500) {
      for (const [key, p] of await firstPeriods(tx, brandId, id, [...set])) first.set(`${id}:${key}`, p)
      continue
    }
    if (keys.size + set.size > 500) await flush()
    ids.push(id)
    for (const k of set) keys.add(k)
  }
  await flush()
  return first
}

/** Each affiliate's recruiter on the brand joins the close (it may have no rows of its own). */
async function addRecruiters(
  tx: Tx,
  brandId: number,
  list: Map<number, AffiliatePeriod>,
  entry: (id: number) => AffiliatePeriod,
) {
  const ids = [...list.keys()]
  for (let i = 0; i < ids.length; i += 500) {
    const rows = await tx
      .select({ id: affiliateAccess.affiliateId, recruiterId: affiliateAccess.recruiterId })
      .from(affiliateAccess)
      .where(
        and(
          eq(affiliateAccess.brandId, brandId),
          inArray(affiliateAccess.affiliateId, ids.slice(i, i + 500)),
        ),
      )
    for (const r of rows) {
      const a = list.get(r.id)
      if (!a || !r.recruiterId) continue
      a.parentId = r.recruiterId
      entry(r.recruiterId)
    }
  }
}

const STATEMENT_STATES = ['pending', 'approved', 'paid'] as const
type StatementRow = typeof statements.$inferSelect

export async function listStatements(
  ctx: AffiliateCtx,
  brandId: number,
  q: {
    affiliate_id?: number
    period?: string
    status?: (typeof STATEMENT_STATES)[number]
    before?: number
    limit?: number
  },
) {
  if (q.period !== undefined && !PERIOD.test(q.period)) throw invalid('period: a month, YYYY-MM')
  const limit = q.limit ?? 500
  const rows = await ctx.db
    .select()
    .from(statements)
    .where(
      and(
        eq(statements.brandId, brandId),
        q.affiliate_id ? eq(statements.affiliateId, q.affiliate_id) : undefined,
        q.period ? eq(statements.period, q.period) : undefined,
        q.status ? eq(statements.status, q.status) : undefined,
        q.before ? lt(statements.id, q.before) : undefined,
      ),
    )
    .orderBy(desc(statements.id))
    .limit(limit)
  return { rows: rows.map(statementView), next_before: rows.length === limit ? rows[rows.length - 1].id : 0 }
}

/** A statement with every row it totals (the brand's, or only the affiliate's own when given). */
export async function statementWithRows(
  ctx: AffiliateCtx,
  brandId: number,
  id: number,
  affiliateId?: number,
) {
  const [s] = await ctx.db
    .select()
    .from(statements)
    .where(
      and(
        eq(statements.id, id),
        eq(statements.brandId, brandId),
        affiliateId ? eq(statements.affiliateId, affiliateId) : undefined,
      ),
    )
  if (!s) throw refuse('STATEMENT_NOT_FOUND', 'no such statement')
  const rows = await ctx.db
    .select()
    .from(commissions)
    .where(
      and(
        eq(commissions.brandId, brandId),
        eq(commissions.affiliateId, s.affiliateId),
        eq(commissions.period, s.period),
      ),
    )
    .orderBy(commissions.eventTime, commissions.id)
  return { statement: statementView(s), rows: rows.map(commissionView) }
}

/** pending → approved → paid, each once: the update names the state it leaves. */
async function advance(
  ctx: AffiliateCtx,
  brandId: number,
  id: number,
  from: 'pending' | 'approved',
  set: Partial<StatementRow>,
) {
  const [row] = await ctx.db
    .update(statements)
    .set(set)
    .where(and(eq(statements.id, id), eq(statements.brandId, brandId), eq(statements.status, from)))
    .returning()
  if (row) return statementView(row)
  const [have] = await ctx.db
    .select({ status: statements.status })
    .from(statements)
    .where(and(eq(statements.id, id), eq(statements.brandId, brandId)))
  if (!have) throw refuse('STATEMENT_NOT_FOUND', 'no such statement')
  throw refuse('STATEMENT_STATE', `the statement is ${have.status}, not ${from}`)
}

export const approveStatement = (ctx: AffiliateCtx, brandId: number, staffId: number, id: number) =>
  advance(ctx, brandId, id, 'pending', {
    status: 'approved',
    approvedAt: ctx.clock.now(),
    approvedBy: staffId,
  })

/**
 * Marks an approved statement paid. A statement whose net is negative in a currency is what the affiliate
 * owes, not a payment: it is refused (its totals never change after the close, so reading them first is
 * enough) and stays approved; later statements are not netted against it.
 */
export async function payStatement(
  ctx: AffiliateCtx,
  brandId: number,
  staffId: number,
  id: number,
  reference: string,
) {
  const [s] = await ctx.db
    .select({ totals: statements.totals, status: statements.status })
    .from(statements)
    .where(and(eq(statements.id, id), eq(statements.brandId, brandId)))
  // the state first: a pending or paid statement is out of order whatever its net
  if (!s) throw refuse('STATEMENT_NOT_FOUND', 'no such statement')
  if (s.status !== 'approved') throw refuse('STATEMENT_STATE', `the statement is ${s.status}, not approved`)
  const owed = (JSON.parse(s?.totals ?? '[]') as Total[]).filter((t) => t.amount_minor < 0)
  if (owed.length > 0)
    throw refuse(
      'STATEMENT_NEGATIVE',
      `the statement's net is negative in ${owed.map((t) => `${t.currency} (${t.amount_minor} minor units)`).join(', ')}: the affiliate owes it, nothing is paid`,
    )
  return advance(ctx, brandId, id, 'approved', {
    status: 'paid',
    paidAt: ctx.clock.now(),
    paidBy: staffId,
    paymentReference: reference,
  })
}

/**
 * The monthly close (job `affiliate.period-close`): a brand with commission rows has its last month
 * closed `graceDays` after it ended (late events of the month still land in it until then).
 */
export async function closeDuePeriods(ctx: AffiliateCtx, graceDays: number) {
  const now = ctx.clock.now()
  const last = periodOf(periodStart(periodOf(now)) - 1)
  if (periodEnd(last) + graceDays * 86_400_000 > now) return 0
  let closedNow = 0
  for (const { id: brandId } of await ctx.db.select({ id: brands.id }).from(brands)) {
    const closed = await closedThrough(ctx.db, brandId)
    if (closed && closed >= last) continue
    // rows still open up to that month: an index range of the brand, not a scan of every row
    const [open] = await ctx.db
      .select({ id: commissions.id })
      .from(commissions)
      .where(
        and(
          eq(commissions.brandId, brandId),
          lte(commissions.period, last),
          closed ? gt(commissions.period, closed) : undefined,
        ),
      )
      .limit(1)
    if (!open) continue
    try {
      await closePeriod(ctx, brandId, 0, last)
      closedNow++
    } catch (e) {
      // another instance closed it first
      if (!(e instanceof Error && 'code' in e && e.code === 'PERIOD_CLOSED')) throw e
    }
  }
  return closedNow
}

export async function listPeriods(ctx: AffiliateCtx, brandId: number) {
  const rows = await ctx.db
    .select()
    .from(commissionPeriods)
    .where(eq(commissionPeriods.brandId, brandId))
    .orderBy(desc(commissionPeriods.period))
  return {
    closed_through: rows[0]?.period ?? null,
    rows: rows.map((r) => ({
      period: r.period,
      closed_time: Math.floor(r.closedAt / 1000),
      closed_by: r.closedBy,
    })),
  }
}

export async function listCommissions(
  ctx: AffiliateCtx,
  brandId: number,
  q: { affiliate_id?: number; customer_id?: number; period?: string; before?: number; limit?: number },
) {
  const limit = q.limit ?? 100
  const rows = await ctx.db
    .select()
    .from(commissions)
    .where(
      and(
        eq(commissions.brandId, brandId),
        q.affiliate_id ? eq(commissions.affiliateId, q.affiliate_id) : undefined,
        q.customer_id ? eq(commissions.customerId, q.customer_id) : undefined,
        q.period ? eq(commissions.period, q.period) : undefined,
        q.before ? lt(commissions.id, q.before) : undefined,
      ),
    )
    .orderBy(desc(commissions.id))
    .limit(limit)
  return { rows: rows.map(commissionView), next_before: rows.length === limit ? rows[rows.length - 1].id : 0 }
}
