import { and, between, desc, eq, inArray, or } from 'drizzle-orm'
import type { Tx } from '../../../kernel/db/client'
import type { AffiliateCtx } from '../context'
import { type DerivedCommission, deriveCommissions, type FactRow } from '../domain/commissions'
import type { Fact } from '../domain/conversions'
import { openPeriodFor } from '../domain/periods'
import { type PlanTerms, type PlanTimeline, planAt } from '../domain/plans'
import {
  commissionPeriods,
  commissions,
  conversionFacts,
  planAssignments,
  planVersions,
  referredCustomers,
  trackingLinks,
} from '../schema'
import type { Referral } from './referral'

type Handle = Pick<Tx, 'select'>

/** The plans that pay an affiliate on a brand over time (its own assignments, else the brand's default). */
export async function timelineOf(db: Handle, brandId: number, affiliateId: number): Promise<PlanTimeline> {
  const assigned = await db
    .select({
      affiliateId: planAssignments.affiliateId,
      from: planAssignments.effectiveFrom,
      planId: planAssignments.planId,
    })
    .from(planAssignments)
    .where(and(eq(planAssignments.brandId, brandId), inArray(planAssignments.affiliateId, [affiliateId, 0])))
    .orderBy(planAssignments.effectiveFrom)
  const tl: PlanTimeline = {
    own: assigned.filter((a) => a.affiliateId === affiliateId),
    defaults: assigned.filter((a) => a.affiliateId === 0),
    versions: new Map(),
  }
  const ids = [...new Set(assigned.map((a) => a.planId).filter((id) => id > 0))]
  if (ids.length === 0) return tl
  const versions = await db
    .select()
    .from(planVersions)
    .where(inArray(planVersions.planId, ids))
    .orderBy(planVersions.effectiveFrom, planVersions.version)
  for (const v of versions) {
    const list = tl.versions.get(v.planId) ?? []
    list.push({ version: v.version, from: v.effectiveFrom, terms: JSON.parse(v.terms) as PlanTerms })
    tl.versions.set(v.planId, list)
  }
  return tl
}

/** The last closed period of a brand, or null. */
export async function closedThrough(db: Handle, brandId: number) {
  const [row] = await db
    .select({ period: commissionPeriods.period })
    .from(commissionPeriods)
    .where(eq(commissionPeriods.brandId, brandId))
    .orderBy(desc(commissionPeriods.period))
    .limit(1)
  return row?.period ?? null
}

/** The report dimensions of a referred customer, kept once with its first fact. */
export async function rememberCustomer(ctx: AffiliateCtx, tx: Tx, ref: Referral) {
  const [have] = await tx
    .select({ id: referredCustomers.customerId })
    .from(referredCustomers)
    .where(eq(referredCustomers.customerId, ref.customerId))
  if (have) return
  const customer = await ctx.accounts.read.customer(ref.customerId)
  const [link] = ref.linkId
    ? await tx
        .select({ landing: trackingLinks.landingPath })
        .from(trackingLinks)
        .where(eq(trackingLinks.id, ref.linkId))
    : []
  const sub = (n: number) => (ref.tracking[`sub${n}`] ?? '').slice(0, 128)
  await tx
    .insert(referredCustomers)
    .values({
      customerId: ref.customerId,
      brandId: ref.brandId,
      affiliateId: ref.affiliateId,
      linkId: ref.linkId,
      sub1: sub(1),
      sub2: sub(2),
      sub3: sub(3),
      sub4: sub(4),
      sub5: sub(5),
      country: customer?.country ?? '',
      landingPath: link?.landing ?? '',
      createdAt: ctx.clock.now(),
    })
    .onConflictDoNothing()
}

type Stored = typeof commissions.$inferSelect

/**
 * Brings a customer's commission rows to what its facts derive (domain/commissions.ts), in the caller's
 * transaction. Per key, the rows of closed periods stay as they are; one row of an open period holds the
 * rest (derived minus closed), updated in place, deleted when the rest is nothing. A key whose period is
 * closed gets that row in the first open period, naming the period it corrects.
 */
export async function reconcileCommissions(ctx: AffiliateCtx, tx: Tx, ref: Referral) {
  const tl = await timelineOf(tx, ref.brandId, ref.affiliateId)
  const stored = await tx
    .select()
    .from(commissions)
    .where(and(eq(commissions.customerId, ref.customerId), eq(commissions.affiliateId, ref.affiliateId)))
  if (tl.own.length === 0 && tl.defaults.length === 0 && stored.length === 0) return
  const facts = (await tx
    .select()
    .from(conversionFacts)
    .where(eq(conversionFacts.customerId, ref.customerId))) as FactRow[]
  const derived = deriveCommissions(ref.customerId, facts, (time) => planAt(tl, time))
  await applyDerived(ctx, tx, ref, derived, stored, await closedThrough(tx, ref.brandId))
}

const DAY = 86_400_000
const BASE_KINDS = ['registration', 'kyc', 'deposit', 'reversal']

/**
 * The same, for a new trade or bonus of the customer, reading only what it can change: its own RevShare row
 * and, for a trade within a CPA's lot window after the first deposit, the CPA. A customer who trades for
 * years costs a delivery the same as in its first week: its other trades are neither read nor derived.
 */
export async function reconcileRevenueFact(ctx: AffiliateCtx, tx: Tx, ref: Referral, fact: Fact) {
  const tl = await timelineOf(tx, ref.brandId, ref.affiliateId)
  const base = (await tx
    .select()
    .from(conversionFacts)
    .where(
      and(eq(conversionFacts.customerId, ref.customerId), inArray(conversionFacts.kind, BASE_KINDS)),
    )) as FactRow[]
  const first = base
    .filter((f) => f.kind === 'deposit')
    .reduce<FactRow | null>(
      (a, f) =>
        !a || f.eventTime < a.eventTime || (f.eventTime === a.eventTime && f.eventId < a.eventId) ? f : a,
      null,
    )
  const qualify = first ? planAt(tl, first.eventTime)?.terms.qualify : undefined
  const until = first && qualify?.min_centilots ? first.eventTime + (qualify.within_days ?? 0) * DAY : null
  const cpaInScope =
    fact.kind === 'trade' &&
    first !== null &&
    until !== null &&
    fact.eventTime >= first.eventTime &&
    fact.eventTime <= until
  const own = (await tx
    .select()
    .from(conversionFacts)
    .where(
      and(
        eq(conversionFacts.customerId, ref.customerId),
        eq(conversionFacts.kind, fact.kind),
        cpaInScope && first && until !== null
          ? or(
              eq(conversionFacts.reference, fact.reference),
              between(conversionFacts.eventTime, first.eventTime, until),
            )
          : eq(conversionFacts.reference, fact.reference),
      ),
    )) as FactRow[]
  const prefix = `c${ref.customerId}:`
  const keys = [
    `${prefix}rev:${fact.kind}:${fact.reference}`,
    ...(cpaInScope ? [`${prefix}cpa`, `${prefix}cpa:reversed`] : []),
  ]
  const stored = await tx
    .select()
    .from(commissions)
    .where(
      and(
        eq(commissions.brandId, ref.brandId),
        eq(commissions.affiliateId, ref.affiliateId),
        inArray(commissions.key, keys),
      ),
    )
  if (tl.own.length === 0 && tl.defaults.length === 0 && stored.length === 0) return
  const derived = deriveCommissions(ref.customerId, [...base, ...own], (time) => planAt(tl, time)).filter(
    (d) => keys.includes(d.key),
  )
  await applyDerived(ctx, tx, ref, derived, stored, await closedThrough(tx, ref.brandId))
}

async function applyDerived(
  ctx: AffiliateCtx,
  tx: Tx,
  ref: Referral,
  derived: DerivedCommission[],
  stored: Stored[],
  closed: string | null,
) {
  const now = ctx.clock.now()
  const byKey = new Map<string, { closedSum: number; closedPeriod: string; open: Stored | null }>()
  for (const r of stored) {
    const k = byKey.get(r.key) ?? { closedSum: 0, closedPeriod: '', open: null }
    if (closed && r.period <= closed) {
      k.closedSum += r.amountMinor
      if (r.period > k.closedPeriod) k.closedPeriod = r.period
    } else k.open = r
    byKey.set(r.key, k)
  }
  const wanted = new Map(derived.map((d) => [d.key, d]))
  for (const [key, k] of byKey) if (!wanted.has(key) && k.open && k.closedSum === 0) await drop(tx, k.open.id)
  for (const [key, k] of byKey) {
    if (wanted.has(key) || k.closedSum === 0) continue
    // facts no longer derive a key that was paid in a closed period: the open period takes it back
    const o = k.open
    const last = stored.find((r) => r.key === key) as Stored
    const undo: DerivedCommission = {
      key,
      kind: last.kind as DerivedCommission['kind'],
      amountMinor: 0,
      currency: last.currency,
      basisMinor: 0,
      rateBp: last.rateBp,
      volume: 0,
      planId: last.planId,
      planVersion: last.planVersion,
      factIds: [],
      eventTime: last.eventTime,
    }
    await put(tx, ref, undo, -k.closedSum, o, k.closedPeriod, closed, now)
  }
  for (const d of derived) {
    const k = byKey.get(d.key) ?? { closedSum: 0, closedPeriod: '', open: null }
    await put(tx, ref, d, d.amountMinor - k.closedSum, k.open, k.closedPeriod, closed, now)
  }
}

async function drop(tx: Tx, id: number) {
  await tx.delete(commissions).where(eq(commissions.id, id))
}

/** The open row of a key holds `rest`: written, changed, or deleted when nothing is left. */
async function put(
  tx: Tx,
  ref: Referral,
  d: DerivedCommission,
  rest: number,
  open: Stored | null,
  closedPeriod: string,
  closed: string | null,
  now: number,
) {
  if (rest === 0) {
    if (open) await drop(tx, open.id)
    return
  }
  const values = {
    kind: d.kind,
    period: openPeriodFor(d.eventTime, closed),
    amountMinor: rest,
    currency: d.currency,
    basisMinor: d.basisMinor,
    rateBp: d.rateBp,
    volume: d.volume,
    planId: d.planId,
    planVersion: d.planVersion,
    factIds: JSON.stringify(d.factIds),
    corrects: closedPeriod,
    eventTime: d.eventTime,
  }
  if (open) {
    const same =
      open.amountMinor === rest &&
      open.period === values.period &&
      open.kind === d.kind &&
      open.currency === d.currency &&
      open.basisMinor === d.basisMinor &&
      open.rateBp === d.rateBp &&
      open.volume === d.volume &&
      open.planId === d.planId &&
      open.planVersion === d.planVersion &&
      open.factIds === values.factIds &&
      open.corrects === closedPeriod &&
      open.eventTime === d.eventTime
    if (!same)
      await tx
        .update(commissions)
        .set({ ...values, updatedAt: now })
        .where(eq(commissions.id, open.id))
    return
  }
  await tx.insert(commissions).values({
    brandId: ref.brandId,
    affiliateId: ref.affiliateId,
    customerId: ref.customerId,
    key: d.key,
    ...values,
    createdAt: now,
    updatedAt: now,
  })
}
