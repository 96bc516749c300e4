import { and, between, desc, eq, inArray, ne, type SQL, sql } from 'drizzle-orm'
import type { Tx } from '../../../kernel/db/client'
import type { AffiliateCtx } from '../context'
import { type DerivedCommission, deriveCommissions, type FactRow } from '../domain/commissions'
import type { Fact } from '../domain/conversions'
import { openPeriodFor, roundingKey } from '../domain/periods'
import { type PlanTerms, type PlanTimeline, planAt, share } from '../domain/plans'
import { earnsAt, standingOf } from '../domain/standing'
import {
  commissionPeriods,
  commissions,
  conversionFacts,
  planAssignments,
  planVersions,
  referredCustomers,
  revshareTotals,
  standingChanges,
  trackingLinks,
} from '../schema'
import type { Referral } from './referral'

type Handle = Pick<Tx, 'select'>

/**
 * The plans that pay an affiliate on a brand over time (its own assignments, else the brand's default), and
 * when it earns there (its standing).
 */
async function timelineOf(db: Handle, brandId: number, affiliateId: number): Promise<PlanTimeline> {
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
    standing: await standingFor(db, brandId, affiliateId),
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

/** When an affiliate earns on a brand: its own status and its access there over time (domain/standing.ts). */
export async function standingFor(db: Handle, brandId: number, affiliateId: number) {
  const changes = await db
    .select()
    .from(standingChanges)
    .where(and(eq(standingChanges.affiliateId, affiliateId), inArray(standingChanges.brandId, [brandId, 0])))
    .orderBy(standingChanges.fromTime, standingChanges.id)
  return standingOf(changes, brandId)
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
 * Brings all of a customer's commission rows to what its facts derive (domain/commissions.ts), in the
 * caller's transaction: the whole history, for a repair or a check (a delivery takes `reconcileFact`).
 * Being the repair, it also sums again, from their rows, the RevShare totals of every open group the
 * customer has rows in (one aggregate per group), so totals that drifted are set right with their rounding.
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
  const derived = deriveCommissions(
    ref.customerId,
    facts,
    (time) => planAt(tl, time),
    (time) => earnsAt(tl.standing, time),
  )
  await applyDerived(ctx, tx, ref, derived, stored, await closedThrough(tx, ref.brandId), true)
}

const DAY = 86_400_000
/** What a CPA depends on besides trades: few per customer. */
const CPA_KINDS = ['kyc', 'deposit', 'reversal']

/**
 * A new fact's delivery: the customer's rows that fact can change, brought to what the facts derive,
 * reading only what derives them (the same rows `reconcileCommissions` would give those keys):
 * - a trade: its RevShare row; the CPA too while the trade falls in the CPA's lot window after the first
 *   deposit and the CPA is not already dated before it (then the window's trades are read);
 * - a bonus or a withdrawal: its RevShare row;
 * - a deposit or its reversal: its net-deposit rows and the CPA (it may change the first deposit);
 * - a KYC approval or the registration: the CPA.
 * A customer who trades for years costs a delivery what it cost in its first weeks.
 */
export async function reconcileFact(ctx: AffiliateCtx, tx: Tx, ref: Referral, fact: Fact) {
  const tl = await timelineOf(tx, ref.brandId, ref.affiliateId)
  const prefix = `c${ref.customerId}:`
  const byCustomer = eq(conversionFacts.customerId, ref.customerId)
  const money = await tx
    .select()
    .from(conversionFacts)
    .where(and(byCustomer, inArray(conversionFacts.kind, CPA_KINDS)))
  const base = money as FactRow[]
  const first = base
    .filter((f) => f.kind === 'deposit')
    .reduce<FactRow | null>(
      (a, f) =>
        !a || f.eventTime < a.eventTime || (f.eventTime === a.eventTime && f.eventId < a.eventId) ? f : a,
      null,
    )
  const qualify = first ? planAt(tl, first.eventTime)?.terms.qualify : undefined
  const until = first && qualify?.min_centilots ? first.eventTime + (qualify.within_days ?? 0) * DAY : null
  // a trade, a bonus or a withdrawal has rows of its own; the other facts move the CPA
  const ownRows = fact.kind === 'trade' || fact.kind === 'bonus' || fact.kind === 'withdrawal'
  let cpa = !ownRows
  if (
    fact.kind === 'trade' &&
    first &&
    until !== null &&
    fact.eventTime >= first.eventTime &&
    fact.eventTime <= until
  ) {
    const [paid] = await tx
      .select({ at: commissions.eventTime })
      .from(commissions)
      .where(
        and(
          eq(commissions.brandId, ref.brandId),
          eq(commissions.affiliateId, ref.affiliateId),
          eq(commissions.key, `${prefix}cpa`),
        ),
      )
      .orderBy(desc(commissions.period))
      .limit(1)
    // qualified before this trade: the trades after the one that qualified it change nothing
    cpa = !(paid && paid.at <= fact.eventTime)
  }
  const keys = cpa ? [`${prefix}cpa`, `${prefix}cpa:reversed`] : []
  if (fact.kind === 'deposit' || fact.kind === 'reversal')
    keys.push(`${prefix}rev:deposit:${fact.reference}`, `${prefix}rev:reversal:${fact.reference}`)
  if (ownRows) keys.push(`${prefix}rev:${fact.kind}:${fact.reference}`)
  const factsWhere = (...conditions: SQL[]) =>
    tx
      .select()
      .from(conversionFacts)
      .where(and(byCustomer, ...conditions))
  const own = ownRows
    ? await factsWhere(eq(conversionFacts.kind, fact.kind), eq(conversionFacts.reference, fact.reference))
    : []
  const window =
    cpa && first && until !== null
      ? await factsWhere(
          eq(conversionFacts.kind, 'trade'),
          between(conversionFacts.eventTime, first.eventTime, until),
        )
      : []
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
  const facts = new Map<number, FactRow>()
  for (const f of [...base, ...(own as FactRow[]), ...(window as FactRow[])]) facts.set(f.id, f)
  const derived = deriveCommissions(
    ref.customerId,
    [...facts.values()],
    (time) => planAt(tl, time),
    (time) => earnsAt(tl.standing, time),
  ).filter((d) => keys.includes(d.key))
  await applyDerived(ctx, tx, ref, derived, stored, await closedThrough(tx, ref.brandId))
}

/** What the closed periods hold of a key, summed. */
interface Closed {
  amount: number
  basis: number
  volume: number
  /** the latest closed period it was paid in ('' for none) */
  period: string
}

/**
 * Per key and currency, the rows of closed periods stay as they are; one row of an open period holds the
 * rest (derived minus closed: amount, basis and lots), updated in place, deleted when nothing is left. A key
 * whose period is closed gets that row in the first open period, naming the period it corrects. Amounts of
 * two currencies never meet: a key whose currency changed after a close (a CPA whose first deposit turned
 * out to be another one) takes back the old currency's amount in a row of that currency.
 */
async function applyDerived(
  ctx: AffiliateCtx,
  tx: Tx,
  ref: Referral,
  derived: DerivedCommission[],
  stored: Stored[],
  closed: string | null,
  resum = false,
) {
  const now = ctx.clock.now()
  const byKey = new Map<string, { closed: Closed; open: Stored | null; last: Stored }>()
  const idOf = (r: { key: string; currency: string }) => `${r.key}\n${r.currency}`
  for (const r of stored) {
    const k = byKey.get(idOf(r)) ?? {
      closed: { amount: 0, basis: 0, volume: 0, period: '' },
      open: null,
      last: r,
    }
    if (closed && r.period <= closed) {
      k.closed.amount += r.amountMinor
      k.closed.basis += r.basisMinor
      k.closed.volume += r.volume
      if (r.period > k.closed.period) k.closed.period = r.period
    } else k.open = r
    byKey.set(idOf(r), k)
  }
  const wanted = new Set(derived.map(idOf))
  const touched = new Map<string, GroupDelta>()
  if (resum) for (const r of stored) if (!closed || r.period > closed) touch(touched, r, 0)
  for (const [id, k] of byKey) {
    if (wanted.has(id)) continue
    // facts no longer derive the key: an open row goes; what a closed period paid is taken back
    const gone: DerivedCommission = {
      key: k.last.key,
      kind: k.last.kind as DerivedCommission['kind'],
      amountMinor: 0,
      currency: k.last.currency,
      basisMinor: 0,
      rateBp: k.last.rateBp,
      volume: 0,
      planId: k.last.planId,
      planVersion: k.last.planVersion,
      factIds: [],
      eventTime: k.last.eventTime,
    }
    await put(tx, ref, gone, k, closed, now, touched)
  }
  const none = { closed: { amount: 0, basis: 0, volume: 0, period: '' }, open: null }
  for (const d of derived) await put(tx, ref, d, byKey.get(idOf(d)) ?? none, closed, now, touched)
  for (const g of touched.values()) await roundPeriod(tx, ref, g, now, resum)
}

/** The unique key of a group's totals (affiliate_revshare_totals). */
const TOTALS_KEY = [
  revshareTotals.brandId,
  revshareTotals.affiliateId,
  revshareTotals.period,
  revshareTotals.planId,
  revshareTotals.planVersion,
  revshareTotals.currency,
]

/** The RevShare rows of one affiliate's open period under one plan version, in one currency. */
interface RoundingGroup {
  period: string
  planId: number
  planVersion: number
  currency: string
}

const REVSHARE_ROWS = ['revshare', 'revshare_reversal'] as const

/** The period-level row that rounds a group's RevShare once (ADR 0024, amendment on rounding). */
const keyOf = (g: RoundingGroup) => roundingKey(g.period, g.planId, g.planVersion, g.currency)

/** What a delivery changed of a group's customer rows: the deltas its running totals take. */
interface GroupDelta extends RoundingGroup {
  basis: number
  paid: number
  rows: number
  rateBp: number
  /** the latest event time of a row written, of a row taken away (0: none) */
  added: number
  removed: number
}

type Row = RoundingGroup & {
  kind: string
  amountMinor: number
  basisMinor: number
  rateBp: number
  eventTime: number
}

/** A customer RevShare row written (`sign` 1) or taken away (-1); 0 only names its group (a re-sum). */
function touch(touched: Map<string, GroupDelta>, r: Row, sign: 1 | -1 | 0) {
  if (!(REVSHARE_ROWS as readonly string[]).includes(r.kind)) return
  const id = keyOf(r)
  let g = touched.get(id)
  if (!g) {
    g = {
      period: r.period,
      planId: r.planId,
      planVersion: r.planVersion,
      currency: r.currency,
      basis: 0,
      paid: 0,
      rows: 0,
      rateBp: 0,
      added: 0,
      removed: 0,
    }
    touched.set(id, g)
  }
  g.basis += sign * r.basisMinor
  g.paid += sign * r.amountMinor
  g.rows += sign
  if (sign === 1) {
    g.rateBp = Math.max(g.rateBp, r.rateBp)
    g.added = Math.max(g.added, r.eventTime)
  } else if (sign === -1) g.removed = Math.max(g.removed, r.eventTime)
}

/**
 * A period pays its rate of the group's whole basis, rounded once: each customer's row is its own share
 * rounded toward zero (a reversal takes back exactly what its deposit paid), and one row of the period (no
 * customer, no basis) holds what those roundings left out: `share(Σ basis) − Σ paid`. The sums are the
 * group's running totals (`affiliate_revshare_totals`), moved by this delivery's deltas, so a delivery
 * costs the same whatever the month holds; they equal the group's rows, so any order of deliveries, a replay
 * or a full re-derivation (`resum`: the totals summed again from the rows) write the same row. It is
 * updated in place, and deleted when nothing is left. The close rounds the month it closes again (rows of
 * earlier months join it: periods.ts) and drops the totals of what it closed.
 */
async function roundPeriod(tx: Tx, ref: Referral, g: GroupDelta, now: number, resum: boolean) {
  const group = and(
    eq(revshareTotals.brandId, ref.brandId),
    eq(revshareTotals.affiliateId, ref.affiliateId),
    eq(revshareTotals.period, g.period),
    eq(revshareTotals.planId, g.planId),
    eq(revshareTotals.planVersion, g.planVersion),
    eq(revshareTotals.currency, g.currency),
  )
  const rowsOf = and(
    eq(commissions.brandId, ref.brandId),
    eq(commissions.period, g.period),
    eq(commissions.affiliateId, ref.affiliateId),
    eq(commissions.planId, g.planId),
    eq(commissions.planVersion, g.planVersion),
    eq(commissions.currency, g.currency),
    inArray(commissions.kind, REVSHARE_ROWS),
    ne(commissions.customerId, 0),
  )
  const keyed = {
    brandId: ref.brandId,
    affiliateId: ref.affiliateId,
    period: g.period,
    planId: g.planId,
    planVersion: g.planVersion,
    currency: g.currency,
  }
  let total: { basis: number; paid: number; rows: number; rateBp: number; eventTime: number }
  if (resum) {
    const [sum] = await tx
      .select({
        basis: sql<number>`coalesce(sum(${commissions.basisMinor}), 0)`,
        paid: sql<number>`coalesce(sum(${commissions.amountMinor}), 0)`,
        rows: sql<number>`count(*)`,
        bp: sql<number>`coalesce(max(${commissions.rateBp}), 0)`,
        at: sql<number>`coalesce(max(${commissions.eventTime}), 0)`,
      })
      .from(commissions)
      .where(rowsOf)
    total = {
      basis: Number(sum?.basis ?? 0),
      paid: Number(sum?.paid ?? 0),
      rows: Number(sum?.rows ?? 0),
      rateBp: Number(sum?.bp ?? 0),
      eventTime: Number(sum?.at ?? 0),
    }
    const set = {
      basisMinor: total.basis,
      paidMinor: total.paid,
      rows: total.rows,
      rateBp: total.rateBp,
      eventTime: total.eventTime,
    }
    if (total.rows === 0) await tx.delete(revshareTotals).where(group)
    else
      await tx
        .insert(revshareTotals)
        .values({ ...keyed, ...set })
        .onConflictDoUpdate({
          target: TOTALS_KEY,
          set,
        })
  } else {
    const [t] = await tx
      .insert(revshareTotals)
      .values({
        ...keyed,
        basisMinor: g.basis,
        paidMinor: g.paid,
        rows: g.rows,
        rateBp: g.rateBp,
        eventTime: g.added,
      })
      .onConflictDoUpdate({
        target: TOTALS_KEY,
        set: {
          basisMinor: sql`${revshareTotals.basisMinor} + excluded.basis_minor`,
          paidMinor: sql`${revshareTotals.paidMinor} + excluded.paid_minor`,
          rows: sql`${revshareTotals.rows} + excluded.rows`,
          rateBp: sql`max(${revshareTotals.rateBp}, excluded.rate_bp)`,
          eventTime: sql`max(${revshareTotals.eventTime}, excluded.event_time)`,
        },
      })
      .returning()
    total = {
      basis: t!.basisMinor,
      paid: t!.paidMinor,
      rows: t!.rows,
      rateBp: t!.rateBp,
      eventTime: t!.eventTime,
    }
    if (total.rows <= 0) await tx.delete(revshareTotals).where(group)
    else if (g.removed > g.added && g.removed === total.eventTime) {
      // the group's latest row went (or moved earlier): the latest one left (rare: a row taken back)
      const [last] = await tx
        .select({ at: commissions.eventTime })
        .from(commissions)
        .where(rowsOf)
        .orderBy(desc(commissions.eventTime))
        .limit(1)
      total.eventTime = last?.at ?? 0
      await tx.update(revshareTotals).set({ eventTime: total.eventTime }).where(group)
    }
  }
  const amount = total.rows > 0 ? share(total.basis, total.rateBp) - total.paid : 0
  const key = keyOf(g)
  const [have] = await tx
    .select()
    .from(commissions)
    .where(
      and(
        eq(commissions.brandId, ref.brandId),
        eq(commissions.affiliateId, ref.affiliateId),
        eq(commissions.key, key),
        eq(commissions.currency, g.currency),
        eq(commissions.period, g.period),
      ),
    )
  if (amount === 0) {
    if (have) await drop(tx, have.id)
    return
  }
  const values = {
    kind: 'revshare' as const,
    amountMinor: amount,
    basisMinor: 0,
    rateBp: total.rateBp,
    eventTime: total.eventTime,
  }
  if (have) {
    if (
      have.amountMinor !== values.amountMinor ||
      have.rateBp !== values.rateBp ||
      have.eventTime !== values.eventTime
    )
      await tx
        .update(commissions)
        .set({ ...values, updatedAt: now })
        .where(eq(commissions.id, have.id))
    return
  }
  await tx.insert(commissions).values({
    brandId: ref.brandId,
    affiliateId: ref.affiliateId,
    customerId: 0,
    key,
    period: g.period,
    currency: g.currency,
    planId: g.planId,
    planVersion: g.planVersion,
    ...values,
    createdAt: now,
    updatedAt: now,
  })
}

async function drop(tx: Tx, id: number) {
  await tx.delete(commissions).where(eq(commissions.id, id))
}

/** The open row of a key holds what the closed periods do not: written, changed, or deleted when nothing. */
async function put(
  tx: Tx,
  ref: Referral,
  d: DerivedCommission,
  k: { closed: Closed; open: Stored | null },
  closed: string | null,
  now: number,
  touched: Map<string, GroupDelta>,
) {
  const rest = {
    amount: d.amountMinor - k.closed.amount,
    basis: d.basisMinor - k.closed.basis,
    volume: d.volume - k.closed.volume,
  }
  const open = k.open
  if (rest.amount === 0 && rest.basis === 0 && rest.volume === 0) {
    if (open) {
      await drop(tx, open.id)
      touch(touched, open, -1)
    }
    return
  }
  const values = {
    kind: d.kind,
    period: openPeriodFor(d.eventTime, closed),
    amountMinor: rest.amount,
    currency: d.currency,
    basisMinor: rest.basis,
    rateBp: d.rateBp,
    volume: rest.volume,
    planId: d.planId,
    planVersion: d.planVersion,
    factIds: JSON.stringify(d.factIds),
    corrects: k.closed.period,
    eventTime: d.eventTime,
  }
  if (open) {
    const same =
      open.amountMinor === values.amountMinor &&
      open.period === values.period &&
      open.kind === values.kind &&
      open.currency === values.currency &&
      open.basisMinor === values.basisMinor &&
      open.rateBp === values.rateBp &&
      open.volume === values.volume &&
      open.planId === values.planId &&
      open.planVersion === values.planVersion &&
      open.factIds === values.factIds &&
      open.corrects === values.corrects &&
      open.eventTime === values.eventTime
    if (!same) {
      await tx
        .update(commissions)
        .set({ ...values, updatedAt: now })
        .where(eq(commissions.id, open.id))
      touch(touched, open, -1)
      touch(touched, values, 1)
    }
    return
  }
  touch(touched, values, 1)
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
