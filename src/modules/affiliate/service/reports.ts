import { and, desc, eq, gte, inArray, lt, type SQL, sql } from 'drizzle-orm'
import { olderThan } from '../../../kernel/db/keyset'
import { fromMinor } from '../../accounts'
import type { AffiliateCtx } from '../context'
import { type CursorPosition, pageOf } from '../domain/cursor'
import type { AffiliateClicks, ReportDimension } from '../ports'
import {
  commissionPeriods,
  commissions,
  conversions,
  referredCustomers,
  statements,
  trackingLinks,
} from '../schema'

export { REPORT_DIMENSIONS, type ReportDimension } from '../ports'

/** What the reports read: the module's tables and the clicks the attribution module fills (null: none). */
export interface ReportCtx extends AffiliateCtx {
  clicks: () => AffiliateClicks | null
}

/** Every kind of commission row (the ledger's and a period close's). */
export const COMMISSION_KINDS = [
  'cpa',
  'cpa_reversal',
  'revshare',
  'revshare_reversal',
  'tier_adjustment',
  'sub_affiliate',
] as const
export type CommissionRowKind = (typeof COMMISSION_KINDS)[number]

const DAY = 86_400_000
const dayKey = (day: number) => new Date(day * DAY).toISOString().slice(0, 10)

interface ReportQuery {
  brandId: number
  affiliateId: number
  /** epoch ms, [from, to) */
  from: number
  to: number
  dimension: ReportDimension
}

interface Money {
  currency: string
  amount: number
}

interface ReportRow {
  key: string
  clicks: number
  unique_clicks: number
  registrations: number
  first_deposits: number
  deposit_volume: Money[]
  commissions: Money[]
}

/**
 * What a conversion or a commission row is grouped by: its event's UTC day, else the referred customer's
 * dimension (affiliate_customers, joined on customer_id; a row without one, such as a period's tier or
 * sub-affiliate row, is in the group '').
 */
function groupOf(dimension: ReportDimension, time: SQL | typeof conversions.eventTime): SQL {
  switch (dimension) {
    case 'day':
      return sql`${time} / ${sql.raw(String(DAY))}`
    case 'link':
      return sql`${referredCustomers.linkId}`
    case 'country':
      return sql`${referredCustomers.country}`
    case 'landing':
      return sql`${referredCustomers.landingPath}`
    default:
      return sql`${referredCustomers[dimension]}`
  }
}

type Sums = Map<string, number>
const addTo = (m: Sums, currency: string, minor: number) => m.set(currency, (m.get(currency) ?? 0) + minor)
/** Money per currency, as the module shows it: the currency's units, currencies in order. */
const moneyOf = (m: Sums): Money[] =>
  [...m.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([currency, minor]) => ({ currency, amount: fromMinor(minor, currency) }))

const newAcc = (key: string): Acc => ({
  key,
  clicks: 0,
  unique_clicks: 0,
  registrations: 0,
  first_deposits: 0,
  volume: new Map(),
  earned: new Map(),
})

interface Acc {
  key: string
  clicks: number
  unique_clicks: number
  registrations: number
  first_deposits: number
  volume: Sums
  earned: Sums
}

/**
 * An affiliate's report on a brand for [from, to) by one dimension: per group its clicks (raw and unique,
 * from the attribution module), registrations, first deposits, deposit volume (the `deposit` rows, per
 * currency) and commissions (every commission row of the range by event time, per currency), and the
 * totals. Conversions and commissions are grouped by their referred customer's dimensions (by day: their
 * event's day); clicks by what the click carried (by day they include pruned touches' daily totals, by any
 * other dimension only the touches still kept). Each number sums rows the lists show for the same range.
 */
export async function report(ctx: ReportCtx, q: ReportQuery) {
  const groups = new Map<string, Acc>()
  const at = (key: string) => {
    let g = groups.get(key)
    if (!g) {
      g = newAcc(key)
      groups.set(key, g)
    }
    return g
  }
  const joined = q.dimension !== 'day'
  const convKey = groupOf(q.dimension, conversions.eventTime)
  const convQuery = ctx.db
    .select({
      key: sql<string | number | null>`${convKey}`,
      kind: conversions.kind,
      currency: conversions.currency,
      n: sql<number>`count(*)`,
      sum: sql<number>`coalesce(sum(${conversions.valueMinor}), 0)`,
    })
    .from(conversions)
  const commKey = groupOf(q.dimension, commissions.eventTime as never)
  const commQuery = ctx.db
    .select({
      key: sql<string | number | null>`${commKey}`,
      currency: commissions.currency,
      sum: sql<number>`coalesce(sum(${commissions.amountMinor}), 0)`,
    })
    .from(commissions)
  const convWhere = and(
    eq(conversions.brandId, q.brandId),
    eq(conversions.affiliateId, q.affiliateId),
    // affiliate_conversions_kind: one index range per kind
    inArray(conversions.kind, ['registration', 'first_deposit', 'deposit']),
    gte(conversions.eventTime, q.from),
    lt(conversions.eventTime, q.to),
  )
  const commWhere = and(
    eq(commissions.brandId, q.brandId),
    eq(commissions.affiliateId, q.affiliateId),
    gte(commissions.eventTime, q.from),
    lt(commissions.eventTime, q.to),
  )
  const [conv, comm, clicks, links] = await Promise.all([
    (joined
      ? convQuery.leftJoin(referredCustomers, eq(referredCustomers.customerId, conversions.customerId))
      : convQuery
    )
      .where(convWhere)
      .groupBy(sql`1`, conversions.kind, conversions.currency),
    (joined
      ? commQuery.leftJoin(referredCustomers, eq(referredCustomers.customerId, commissions.customerId))
      : commQuery
    )
      .where(commWhere)
      .groupBy(sql`1`, commissions.currency),
    ctx.clicks()?.grouped(q.brandId, q.affiliateId, q.from, q.to, q.dimension) ?? [],
    q.dimension === 'link' ? linkCodes(ctx, q.brandId, q.affiliateId) : new Map<number, string>(),
  ])
  const keyOf = (k: string | number | null) =>
    k === null
      ? ''
      : q.dimension === 'day'
        ? dayKey(Number(k))
        : q.dimension === 'link'
          ? (links.get(Number(k)) ?? `#${k}`)
          : String(k)
  for (const r of conv) {
    const g = at(keyOf(r.key))
    if (r.kind === 'registration') g.registrations += Number(r.n)
    else if (r.kind === 'first_deposit') g.first_deposits += Number(r.n)
    else addTo(g.volume, r.currency, Number(r.sum))
  }
  for (const r of comm) addTo(at(keyOf(r.key)).earned, r.currency, Number(r.sum))
  for (const c of clicks) {
    const g = at(q.dimension === 'link' && c.key !== '' ? keyOf(c.key) : c.key)
    g.clicks += c.clicks
    g.unique_clicks += c.unique
  }
  // by day, every day of the range has its row
  if (q.dimension === 'day' && q.to - q.from <= 366 * DAY)
    for (let d = Math.floor(q.from / DAY); d * DAY < q.to; d++) at(dayKey(d))
  const list = [...groups.values()]
  if (q.dimension === 'day') list.sort((a, b) => a.key.localeCompare(b.key))
  else
    list.sort(
      (a, b) => b.clicks - a.clicks || b.registrations - a.registrations || a.key.localeCompare(b.key),
    )
  const total = newAcc('total')
  for (const g of list) {
    total.clicks += g.clicks
    total.unique_clicks += g.unique_clicks
    total.registrations += g.registrations
    total.first_deposits += g.first_deposits
    for (const [c, v] of g.volume) addTo(total.volume, c, v)
    for (const [c, v] of g.earned) addTo(total.earned, c, v)
  }
  const view = (g: Acc): ReportRow => ({
    key: g.key,
    clicks: g.clicks,
    unique_clicks: g.unique_clicks,
    registrations: g.registrations,
    first_deposits: g.first_deposits,
    deposit_volume: moneyOf(g.volume),
    commissions: moneyOf(g.earned),
  })
  const { key: _, ...totals } = view(total)
  return { dimension: q.dimension, rows: list.map(view), totals }
}

/** The affiliate's link codes by id (a report by link names its links). */
async function linkCodes(ctx: AffiliateCtx, brandId: number, affiliateId: number) {
  const rows = await ctx.db
    .select({ id: trackingLinks.id, code: trackingLinks.code })
    .from(trackingLinks)
    .where(and(eq(trackingLinks.brandId, brandId), eq(trackingLinks.affiliateId, affiliateId)))
  return new Map(rows.map((r) => [r.id, r.code]))
}

/** A report as CSV rows: one column per currency of each money figure (`deposit_volume_USD`). */
export function reportTable(r: Awaited<ReturnType<typeof report>>) {
  const currencies = (pick: (x: ReportRow) => Money[]) =>
    [...new Set(r.rows.flatMap((x) => pick(x).map((m) => m.currency)))].sort()
  const volume = currencies((x) => x.deposit_volume)
  const earned = currencies((x) => x.commissions)
  const amount = (list: Money[], c: string) => list.find((m) => m.currency === c)?.amount ?? 0
  const header = [
    r.dimension,
    'clicks',
    'unique_clicks',
    'registrations',
    'first_deposits',
    ...volume.map((c) => `deposit_volume_${c}`),
    ...earned.map((c) => `commissions_${c}`),
  ]
  const line = (key: string, x: Omit<ReportRow, 'key'>) => [
    key,
    x.clicks,
    x.unique_clicks,
    x.registrations,
    x.first_deposits,
    ...volume.map((c) => amount(x.deposit_volume, c)),
    ...earned.map((c) => amount(x.commissions, c)),
  ]
  return { header, rows: [...r.rows.map((x) => line(x.key, x)), line('total', r.totals)] }
}

// ---- earnings: the commission rows and what they add up to ----

interface CommissionFilter {
  brandId: number
  affiliateId: number
  /** a period (YYYY-MM): its rows, whatever their event time; else the event time range */
  period?: string
  from?: number
  to?: number
  kind?: CommissionRowKind
}

const commissionsOf = (f: CommissionFilter) =>
  and(
    eq(commissions.brandId, f.brandId),
    eq(commissions.affiliateId, f.affiliateId),
    f.period !== undefined ? eq(commissions.period, f.period) : undefined,
    f.period === undefined && f.from !== undefined ? gte(commissions.eventTime, f.from) : undefined,
    f.period === undefined && f.to !== undefined ? lt(commissions.eventTime, f.to) : undefined,
    f.kind ? eq(commissions.kind, f.kind) : undefined,
  )

const periodOfTime = (ms: number) => new Date(ms).toISOString().slice(0, 7)

/**
 * An affiliate's earnings on a brand: the commission rows of [from, to) (by event time) per kind and
 * currency, their totals, and the current month's period with its running total (open until a close).
 */
export async function earnings(
  ctx: ReportCtx,
  f: { brandId: number; affiliateId: number; from: number; to: number; now: number },
) {
  const current = periodOfTime(f.now)
  const [byKind, open, closed] = await Promise.all([
    ctx.db
      .select({
        kind: commissions.kind,
        currency: commissions.currency,
        rows: sql<number>`count(*)`,
        sum: sql<number>`coalesce(sum(${commissions.amountMinor}), 0)`,
      })
      .from(commissions)
      .where(commissionsOf(f))
      .groupBy(commissions.kind, commissions.currency),
    ctx.db
      .select({
        currency: commissions.currency,
        rows: sql<number>`count(*)`,
        sum: sql<number>`coalesce(sum(${commissions.amountMinor}), 0)`,
      })
      .from(commissions)
      .where(commissionsOf({ ...f, period: current }))
      .groupBy(commissions.currency),
    ctx.db
      .select({ period: commissionPeriods.period })
      .from(commissionPeriods)
      .where(and(eq(commissionPeriods.brandId, f.brandId), eq(commissionPeriods.period, current))),
  ])
  const totals = new Map<string, { minor: number; rows: number }>()
  for (const r of byKind) {
    const t = totals.get(r.currency) ?? { minor: 0, rows: 0 }
    t.minor += Number(r.sum)
    t.rows += Number(r.rows)
    totals.set(r.currency, t)
  }
  const sorted = <T extends { currency: string }>(xs: T[]) =>
    xs.sort((a, b) => a.currency.localeCompare(b.currency))
  return {
    by_kind: byKind
      .map((r) => ({
        kind: r.kind,
        currency: r.currency,
        amount: fromMinor(Number(r.sum), r.currency),
        rows: Number(r.rows),
      }))
      .sort((a, b) => a.kind.localeCompare(b.kind) || a.currency.localeCompare(b.currency)),
    totals: sorted(
      [...totals.entries()].map(([currency, t]) => ({
        currency,
        amount: fromMinor(t.minor, currency),
        amount_minor: t.minor,
        rows: t.rows,
      })),
    ),
    current_period: {
      period: current,
      status: closed.length > 0 ? ('closed' as const) : ('open' as const),
      totals: sorted(
        open.map((r) => ({
          currency: r.currency,
          amount: fromMinor(Number(r.sum), r.currency),
          amount_minor: Number(r.sum),
          rows: Number(r.rows),
        })),
      ),
    },
  }
}

type CommissionRecord = typeof commissions.$inferSelect

/** A commission row as the cabinet and staff see it (amounts in the currency's units, rate in percent). */
export function commissionView(r: CommissionRecord) {
  return {
    id: r.id,
    affiliate_id: r.affiliateId,
    customer_id: r.customerId,
    source_affiliate_id: r.sourceAffiliateId,
    key: r.key,
    kind: r.kind,
    amount: fromMinor(r.amountMinor, r.currency),
    amount_minor: r.amountMinor,
    currency: r.currency,
    basis: fromMinor(r.basisMinor, r.currency),
    rate: r.rateBp / 100,
    volume_lots: r.volume / 100,
    period: r.period,
    corrects: r.corrects,
    plan_id: r.planId,
    plan_version: r.planVersion,
    event_time: Math.floor(r.eventTime / 1000),
    facts: JSON.parse(r.factIds) as number[],
  }
}
type CommissionView = ReturnType<typeof commissionView>

/** Commission rows newest first by (event time, id) below the cursor: an index range wherever it points. */
const commissionsBelow = (
  ctx: AffiliateCtx,
  f: CommissionFilter,
  cursor: CursorPosition | null,
  limit: number,
) =>
  ctx.db
    .select()
    .from(commissions)
    .where(and(commissionsOf(f), olderThan(commissions.eventTime, commissions.id, cursor)))
    .orderBy(desc(commissions.eventTime), desc(commissions.id))
    .limit(limit)

/** One page of commission rows, newest first by (event time, id) below the cursor. */
export async function commissionPage(
  ctx: AffiliateCtx,
  f: CommissionFilter,
  cursor: CursorPosition | null,
  size: number,
) {
  const { list, has_more, next_cursor } = pageOf(await commissionsBelow(ctx, f, cursor, size + 1), size)
  return { rows: list.map(commissionView), has_more, next_cursor }
}

/** Every commission row of a filter (a CSV export), read in keyset pages. */
export async function allCommissions(ctx: AffiliateCtx, f: CommissionFilter) {
  const out: CommissionView[] = []
  let cursor: CursorPosition | null = null
  for (;;) {
    const rows: CommissionRecord[] = await commissionsBelow(ctx, f, cursor, 5_000)
    out.push(...rows.map(commissionView))
    if (rows.length < 5_000) return out
    const last = rows[rows.length - 1]
    cursor = { time: last.eventTime, id: last.id }
  }
}

/** Commission rows as CSV rows. */
export function commissionTable(rows: CommissionView[]) {
  return {
    header: [
      'id',
      'event_time',
      'period',
      'kind',
      'customer_id',
      'amount',
      'currency',
      'basis',
      'rate_percent',
      'volume_lots',
      'plan_id',
      'plan_version',
      'corrects',
      'facts',
    ],
    rows: rows.map((r) => [
      r.id,
      new Date(r.event_time * 1000).toISOString(),
      r.period,
      r.kind,
      r.customer_id,
      r.amount,
      r.currency,
      r.basis,
      r.rate,
      r.volume_lots,
      r.plan_id,
      r.plan_version,
      r.corrects,
      r.facts.join(' '),
    ]),
  }
}

// ---- statements ----

type StatementRecord = typeof statements.$inferSelect

export function statementView(s: StatementRecord) {
  const totals = JSON.parse(s.totals) as { currency: string; amount_minor: number; rows: number }[]
  const seconds = (ms: number | null) => (ms === null ? null : Math.floor(ms / 1000))
  return {
    id: s.id,
    affiliate_id: s.affiliateId,
    period: s.period,
    status: s.status,
    totals: totals.map((t) => ({
      currency: t.currency,
      amount: fromMinor(t.amount_minor, t.currency),
      amount_minor: t.amount_minor,
      rows: t.rows,
    })),
    rows: s.rows,
    created_time: Math.floor(s.createdAt / 1000),
    approved_time: seconds(s.approvedAt),
    paid_time: seconds(s.paidAt),
    payment_reference: s.paymentReference,
  }
}

/** An affiliate's statements on a brand, newest period first. */
export async function statementList(ctx: AffiliateCtx, brandId: number, affiliateId: number) {
  const rows = await ctx.db
    .select()
    .from(statements)
    .where(and(eq(statements.brandId, brandId), eq(statements.affiliateId, affiliateId)))
    .orderBy(desc(statements.period))
  return { rows: rows.map(statementView) }
}

/** One statement of the affiliate on the brand (another's is null: a 404 that says nothing of it). */
export async function statementOf(ctx: AffiliateCtx, brandId: number, affiliateId: number, id: number) {
  const [s] = await ctx.db
    .select()
    .from(statements)
    .where(
      and(eq(statements.id, id), eq(statements.brandId, brandId), eq(statements.affiliateId, affiliateId)),
    )
  return s ?? null
}
