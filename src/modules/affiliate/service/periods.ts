import { and, between, desc, eq, gt, gte, inArray, lt, lte, ne, sql } from 'drizzle-orm'
import { brands } from '../../../kernel/brand/schema'
import type { Tx } from '../../../kernel/db/client'
import { invalid } from '../../../kernel/http/errors'
import type { AffiliateCtx } from '../context'
import { type FactRow, firstDepositCounts } from '../domain/commissions'
import { type AffiliatePeriod, closeRows, PERIOD, periodEnd, periodOf, periodStart } from '../domain/periods'
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
  }
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
    await tx.insert(commissionPeriods).values({ brandId, period, closedAt: now, closedBy: staffId })
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
      )
    const { timelineOf, termsOf } = await brandPlans(tx, brandId)
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
        const g = a.revshare.find(
          (x) => x.planId === s.planId && x.version === s.planVersion && x.currency === s.currency,
        )
        if (g) {
          g.basis += Number(s.basis)
          g.paid += amount
        } else
          a.revshare.push({
            planId: s.planId,
            version: s.planVersion,
            terms,
            currency: s.currency,
            basis: Number(s.basis),
            paid: amount,
          })
      }
    }
    await addTierMetrics(tx, brandId, period, list, timelineOf)
    await addRecruiters(tx, brandId, list, entry)
    const closing = closeRows(period, [...list.values()])
    // what a period's rounding row (commission-ledger.ts) still misses joins that row
    const rounding = closing.filter((r) => r.kind === 'revshare')
    const rounded = new Set<(typeof closing)[number]>()
    for (const r of rounding) {
      const [have] = await tx
        .select({ id: commissions.id, amount: commissions.amountMinor })
        .from(commissions)
        .where(
          and(
            eq(commissions.brandId, brandId),
            eq(commissions.affiliateId, r.affiliateId),
            eq(commissions.key, r.key),
            eq(commissions.currency, r.currency),
            eq(commissions.period, period),
          ),
        )
      if (!have) continue
      rounded.add(r)
      const a = entry(r.affiliateId)
      a.totals.set(r.currency, (a.totals.get(r.currency) ?? 0) + r.amountMinor)
      if (have.amount + r.amountMinor === 0) {
        await tx.delete(commissions).where(eq(commissions.id, have.id))
        a.rows.set(r.currency, (a.rows.get(r.currency) ?? 0) - 1)
      } else
        await tx
          .update(commissions)
          .set({ amountMinor: have.amount + r.amountMinor, updatedAt: now })
          .where(eq(commissions.id, have.id))
    }
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
          eventTime: end - 1,
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
  list: Map<number, AffiliatePeriod>,
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

export const payStatement = (
  ctx: AffiliateCtx,
  brandId: number,
  staffId: number,
  id: number,
  reference: string,
) =>
  advance(ctx, brandId, id, 'approved', {
    status: 'paid',
    paidAt: ctx.clock.now(),
    paidBy: staffId,
    paymentReference: reference,
  })

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
