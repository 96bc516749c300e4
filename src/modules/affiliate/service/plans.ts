import { and, asc, desc, eq, inArray, sql } from 'drizzle-orm'
import type { Tx } from '../../../kernel/db/client'
import { invalid } from '../../../kernel/http/errors'
import type { AffiliateCtx } from '../context'
import {
  type CommissionKind,
  deriveCommissions,
  type FactRow,
  firstDepositCounts,
} from '../domain/commissions'
import { closeRows, periodOf } from '../domain/periods'
import { type AppliedPlan, type PlanTerms, termsProblem } from '../domain/plans'
import { earnsAt } from '../domain/standing'
import { refuse } from '../errors'
import {
  affiliateAccess,
  commissionPlans,
  conversionFacts,
  planAssignments,
  planVersions,
  referredCustomers,
} from '../schema'
import { affiliateOfBrand } from './affiliates'
import { standingFor } from './commission-ledger'

const checked = (terms: PlanTerms) => {
  const problem = termsProblem(terms)
  if (problem) throw invalid(`terms.${problem}`)
  return terms
}

async function planRow(ctx: AffiliateCtx, brandId: number, id: number) {
  const [plan] = await ctx.db
    .select()
    .from(commissionPlans)
    .where(and(eq(commissionPlans.id, id), eq(commissionPlans.brandId, brandId)))
  if (!plan) throw refuse('PLAN_NOT_FOUND', 'no such plan on this brand')
  return plan
}

async function planView(ctx: AffiliateCtx, plan: typeof commissionPlans.$inferSelect) {
  const versions = await ctx.db
    .select()
    .from(planVersions)
    .where(eq(planVersions.planId, plan.id))
    .orderBy(desc(planVersions.version))
  return {
    id: plan.id,
    name: plan.name,
    version: versions[0]?.version ?? 0,
    terms: JSON.parse(versions[0]?.terms ?? '{}') as PlanTerms,
    versions: versions.map((v) => ({
      version: v.version,
      effective_time: Math.floor(v.effectiveFrom / 1000),
      terms: JSON.parse(v.terms) as PlanTerms,
    })),
    created_time: Math.floor(plan.createdAt / 1000),
  }
}

export async function listPlans(ctx: AffiliateCtx, brandId: number) {
  const plans = await ctx.db
    .select()
    .from(commissionPlans)
    .where(eq(commissionPlans.brandId, brandId))
    .orderBy(asc(commissionPlans.id))
  const [dflt] = await ctx.db
    .select({ planId: planAssignments.planId })
    .from(planAssignments)
    .where(and(eq(planAssignments.brandId, brandId), eq(planAssignments.affiliateId, 0)))
    .orderBy(desc(planAssignments.effectiveFrom))
    .limit(1)
  return {
    default_plan_id: dflt?.planId || null,
    rows: await Promise.all(plans.map((p) => planView(ctx, p))),
  }
}

export const readPlan = async (ctx: AffiliateCtx, brandId: number, id: number) =>
  planView(ctx, await planRow(ctx, brandId, id))

/** A new plan, its version 1 in effect from now. */
export async function createPlan(
  ctx: AffiliateCtx,
  brandId: number,
  staffId: number,
  input: { name: string; terms: PlanTerms },
) {
  const terms = checked(input.terms)
  const now = ctx.clock.now()
  const id = await ctx.db.transaction(async (tx) => {
    const [plan] = await tx
      .insert(commissionPlans)
      .values({ brandId, name: input.name, createdAt: now })
      .onConflictDoNothing()
      .returning({ id: commissionPlans.id })
    if (!plan) throw refuse('PLAN_EXISTS', 'a plan of this name exists on this brand')
    await tx.insert(planVersions).values({
      planId: plan.id,
      version: 1,
      effectiveFrom: now,
      terms: JSON.stringify(terms),
      createdBy: staffId,
      createdAt: now,
    })
    return plan.id
  })
  return readPlan(ctx, brandId, id)
}

/**
 * New terms for a plan: a version in effect from now on. What facts before now earned stays as it was
 * (each fact is paid under the version in effect at its time).
 */
export async function revisePlan(
  ctx: AffiliateCtx,
  brandId: number,
  staffId: number,
  id: number,
  input: { terms: PlanTerms },
) {
  const terms = checked(input.terms)
  await planRow(ctx, brandId, id)
  const now = ctx.clock.now()
  await ctx.db.transaction(async (tx) => {
    const [last] = await tx
      .select({
        version: sql<number>`max(${planVersions.version})`,
        from: sql<number>`max(${planVersions.effectiveFrom})`,
      })
      .from(planVersions)
      .where(eq(planVersions.planId, id))
    await tx.insert(planVersions).values({
      planId: id,
      version: Number(last?.version ?? 0) + 1,
      // never before the version it follows (an instance whose clock is behind, a clock stepped back):
      // a version dated earlier would never be the one in effect
      effectiveFrom: Math.max(now, Number(last?.from ?? 0) + 1),
      terms: JSON.stringify(terms),
      createdBy: staffId,
      createdAt: now,
    })
  })
  return readPlan(ctx, brandId, id)
}

/**
 * From now on the plan pays this affiliate on the brand (`affiliateId` 0: the brand's default, for
 * affiliates without their own); a null plan: none from now on.
 */
export async function assignPlan(
  ctx: AffiliateCtx,
  brandId: number,
  staffId: number,
  affiliateId: number,
  planId: number | null,
) {
  if (affiliateId) await affiliateOfBrand(ctx, brandId, affiliateId)
  if (planId) await planRow(ctx, brandId, planId)
  const now = ctx.clock.now()
  // never before the assignment it follows (an instance whose clock is behind): it would never be in effect
  const [last] = await ctx.db
    .select({ from: sql<number>`max(${planAssignments.effectiveFrom})` })
    .from(planAssignments)
    .where(and(eq(planAssignments.brandId, brandId), eq(planAssignments.affiliateId, affiliateId)))
  const previous = Number(last?.from ?? 0)
  await ctx.db
    .insert(planAssignments)
    .values({
      brandId,
      affiliateId,
      effectiveFrom: Math.max(now, previous + 1),
      planId: planId ?? 0,
      assignedBy: staffId,
      createdAt: now,
    })
    .onConflictDoUpdate({
      target: [planAssignments.brandId, planAssignments.affiliateId, planAssignments.effectiveFrom],
      set: { planId: planId ?? 0, assignedBy: staffId },
    })
  return planHistory(ctx, brandId, affiliateId)
}

/** The plans that paid (and pay) an affiliate, or the brand's default, newest first. */
export async function planHistory(ctx: AffiliateCtx, brandId: number, affiliateId: number) {
  if (affiliateId) await affiliateOfBrand(ctx, brandId, affiliateId)
  const rows = await ctx.db
    .select()
    .from(planAssignments)
    .where(and(eq(planAssignments.brandId, brandId), eq(planAssignments.affiliateId, affiliateId)))
    .orderBy(desc(planAssignments.effectiveFrom))
  return {
    affiliate_id: affiliateId,
    plan_id: rows[0]?.planId || null,
    history: rows.map((r) => ({
      plan_id: r.planId || null,
      effective_time: Math.floor(r.effectiveFrom / 1000),
      assigned_by: r.assignedBy,
    })),
  }
}

/**
 * The affiliate that recruited this one on this brand (its plan's sub_affiliate_bp of this one's earnings
 * here), or none. Each brand keeps its own: an affiliate shared by two brands is recruited per brand.
 */
export async function setRecruiter(
  ctx: AffiliateCtx,
  brandId: number,
  id: number,
  recruiterId: number | null,
) {
  await affiliateOfBrand(ctx, brandId, id)
  if (recruiterId === id) throw invalid('recruiter_id: an affiliate cannot recruit itself')
  if (recruiterId) await affiliateOfBrand(ctx, brandId, recruiterId)
  // the chain above the recruiter is read in the transaction that writes: two changes at once cannot
  // close a circle that neither saw
  await ctx.uow.run(async (tx) => {
    if (recruiterId && (await recruitersAbove(tx, brandId, recruiterId)).has(id))
      throw invalid(`recruiter_id: affiliate ${recruiterId} is recruited by ${id}, directly or not`)
    await tx
      .update(affiliateAccess)
      .set({ recruiterId })
      .where(and(eq(affiliateAccess.affiliateId, id), eq(affiliateAccess.brandId, brandId)))
  })
  return { affiliate_id: id, recruiter_id: recruiterId }
}

/** An affiliate and its recruiters on the brand, up its chain: each recruited by the next. */
async function recruitersAbove(tx: Tx, brandId: number, from: number) {
  const seen = new Set<number>([from])
  let at: number | null = from
  while (at !== null) {
    const [row]: { recruiterId: number | null }[] = await tx
      .select({ recruiterId: affiliateAccess.recruiterId })
      .from(affiliateAccess)
      .where(and(eq(affiliateAccess.affiliateId, at), eq(affiliateAccess.brandId, brandId)))
    at = row?.recruiterId ?? null
    if (at === null || seen.has(at)) break
    seen.add(at)
  }
  return seen
}

const PREVIEW_MAX_DAYS = 366

/** The UTC start of a calendar day, or NaN (2026-02-31 is not one: Date.parse would roll it over). */
function dayStart(day: string) {
  const ms = Date.parse(`${day}T00:00:00Z`)
  return Number.isFinite(ms) && new Date(ms).toISOString().slice(0, 10) === day ? ms : Number.NaN
}
const DAY = 86_400_000

/**
 * What these terms would have paid an affiliate for its customers' facts in [from, to): the rows the
 * derivation gives with the terms in effect at every time, totalled per currency and kind, and per month
 * with a tiered plan's adjustment (sub-affiliate overrides are the recruiter's, not shown). Nothing is
 * written.
 */
export async function previewPlan(
  ctx: AffiliateCtx,
  brandId: number,
  input: { affiliate_id: number; terms: PlanTerms; from: string; to: string },
) {
  const terms = checked(input.terms)
  const from = dayStart(input.from)
  const to = dayStart(input.to) + DAY
  if (Number.isNaN(from)) throw invalid('from: a day of the calendar, YYYY-MM-DD')
  if (Number.isNaN(to) || to <= from) throw invalid('to: a day of the calendar, YYYY-MM-DD, not before from')
  if ((to - from) / DAY > PREVIEW_MAX_DAYS) throw invalid(`to: at most ${PREVIEW_MAX_DAYS} days after from`)
  await affiliateOfBrand(ctx, brandId, input.affiliate_id)
  const plan: AppliedPlan = { planId: 0, version: 0, terms }
  // what it earned: nothing while it was suspended or its access revoked, as the ledger
  const standing = await standingFor(ctx.db, brandId, input.affiliate_id)
  const earns = (time: number) => earnsAt(standing, time)
  const customers = await ctx.db
    .select({ id: referredCustomers.customerId })
    .from(referredCustomers)
    .where(and(eq(referredCustomers.brandId, brandId), eq(referredCustomers.affiliateId, input.affiliate_id)))
  type Line = { currency: string; kind: CommissionKind | 'tier_adjustment'; amount: number; rows: number }
  const byKind = new Map<string, Line>()
  const months = new Map<string, Month>()
  const ids = customers.map((c) => c.id)
  for (let i = 0; i < ids.length; i += 500) {
    const facts = await ctx.db
      .select()
      .from(conversionFacts)
      .where(inArray(conversionFacts.customerId, ids.slice(i, i + 500)))
    const perCustomer = new Map<number, FactRow[]>()
    for (const f of facts) {
      const list = perCustomer.get(f.customerId) ?? []
      list.push(f as FactRow)
      perCustomer.set(f.customerId, list)
    }
    for (const [customerId, list] of perCustomer) {
      for (const f of list) {
        if (f.kind !== 'trade' || f.currency === '' || f.eventTime < from || f.eventTime >= to) continue
        if (earns(f.eventTime)) monthOf(months, periodOf(f.eventTime)).volume += f.volume
      }
      // a first deposit counts as the close counts it: standing and qualified under the terms (periods.ts)
      const first = firstDepositCounts(list, () => terms)
      if (first?.counts) {
        const at = first.first.eventTime
        if (at >= from && at < to && earns(at)) monthOf(months, periodOf(at)).customers++
      }
      for (const r of deriveCommissions(customerId, list, () => plan, earns)) {
        if (r.eventTime < from || r.eventTime >= to) continue
        const k = `${r.currency}:${r.kind}`
        const t = byKind.get(k) ?? { currency: r.currency, kind: r.kind, amount: 0, rows: 0 }
        t.amount += r.amountMinor
        t.rows++
        byKind.set(k, t)
        if (r.kind === 'revshare' || r.kind === 'revshare_reversal') {
          // a tiered plan's reversal counts against the month of the deposit it reverses, as the closes price
          // it (periods.ts); any other plan's stays in its own month (its rounding there, as the ledger's)
          const deposit =
            r.kind === 'revshare_reversal' && terms.type === 'tiered_revshare'
              ? list.find((f) => f.id === r.factIds[0])
              : undefined
          const m = monthOf(months, periodOf(deposit?.eventTime ?? r.eventTime))
          m.basis.set(r.currency, (m.basis.get(r.currency) ?? 0) + r.basisMinor)
          m.paid.set(r.currency, (m.paid.get(r.currency) ?? 0) + r.amountMinor)
        }
      }
    }
  }
  const tiers = [...months.entries()].flatMap(([period, m]) =>
    closeRows(period, [
      {
        affiliateId: input.affiliate_id,
        parentId: null,
        plan,
        revshare: [...m.basis.entries()].map(([currency, basis]) => ({
          planId: 0,
          version: 0,
          terms,
          currency,
          basis,
          paid: m.paid.get(currency) ?? 0,
        })),
        volume: m.volume,
        customers: m.customers,
        totals: new Map(),
      },
    ]).map((r) => ({ period, kind: r.kind, currency: r.currency, amount: r.amountMinor })),
  )
  // the month's tier, and its RevShare rounded once on the month's basis (as a close adds them)
  for (const t of tiers) {
    if (t.kind === 'sub_affiliate') continue
    const k = `${t.currency}:${t.kind}`
    const have: Line = byKind.get(k) ?? { currency: t.currency, kind: t.kind, amount: 0, rows: 0 }
    have.amount += t.amount
    have.rows++
    byKind.set(k, have)
  }
  const lines = [...byKind.values()].sort(
    (a, b) => a.currency.localeCompare(b.currency) || a.kind.localeCompare(b.kind),
  )
  const totals = new Map<string, number>()
  for (const l of lines) totals.set(l.currency, (totals.get(l.currency) ?? 0) + l.amount)
  return {
    affiliate_id: input.affiliate_id,
    from: input.from,
    to: input.to,
    customers: ids.length,
    lines: lines.map((l) => ({ currency: l.currency, kind: l.kind, amount_minor: l.amount, rows: l.rows })),
    totals: [...totals.entries()].map(([currency, amount]) => ({ currency, amount_minor: amount })),
  }
}

interface Month {
  basis: Map<string, number>
  paid: Map<string, number>
  volume: number
  customers: number
}

function monthOf(months: Map<string, Month>, period: string) {
  let m = months.get(period)
  if (!m) {
    m = { basis: new Map(), paid: new Map(), volume: 0, customers: 0 }
    months.set(period, m)
  }
  return m
}
