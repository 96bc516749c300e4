import { invalid } from '../../../kernel/http/errors'
import { decodeCursor } from '../domain/cursor'
import type { Period } from '../domain/range'
import { refuse } from '../errors'
import {
  allCommissions,
  type CommissionRowKind,
  commissionPage,
  commissionTable,
  earnings,
  type ReportCtx,
  type ReportDimension,
  report,
  reportTable,
  statementList,
  statementOf,
  statementView,
} from '../service/reports'
import type { AffiliatePrincipal } from './tokens'

const DAY = 86_400_000
const day = (ms: number) => new Date(ms).toISOString().slice(0, 10)
/** The period's days as the dashboard shows them. */
export const periodDays = (p: Period) => ({ range: p.range, from: day(p.from), to: day(p.to - DAY) })

/** The cabinet's report of the signed-in affiliate for a period (its CSV: `reportTable`). */
export async function cabinetReport(
  ctx: ReportCtx,
  p: AffiliatePrincipal,
  period: Period,
  dimension: ReportDimension,
) {
  const r = await report(ctx, {
    brandId: p.brandId,
    affiliateId: p.affiliate.id,
    from: period.from,
    to: period.to,
    dimension,
  })
  return { ...periodDays(period), ...r }
}

export const reportCsvName = (r: { dimension: string; from: string; to: string }) =>
  `report-${r.dimension}-${r.from}-${r.to}.csv`
export { reportTable }

export async function cabinetEarnings(ctx: ReportCtx, p: AffiliatePrincipal, period: Period) {
  const e = await earnings(ctx, {
    brandId: p.brandId,
    affiliateId: p.affiliate.id,
    from: period.from,
    to: period.to,
    now: ctx.clock.now(),
  })
  return { ...periodDays(period), ...e }
}

const cursorOf = (text: string | undefined) => {
  if (!text) return null
  const c = decodeCursor(text)
  if (!c) throw invalid('cursor: not a next_cursor of this list')
  return c
}

interface CommissionQuery {
  kind?: CommissionRowKind
  /** YYYY-MM: the period's rows (the range is not applied) */
  period?: string
  cursor?: string
  limit?: number
}

const filterOf = (p: AffiliatePrincipal, period: Period, q: CommissionQuery) => ({
  brandId: p.brandId,
  affiliateId: p.affiliate.id,
  kind: q.kind,
  ...(q.period ? { period: q.period } : { from: period.from, to: period.to }),
})

/** The commission rows behind an earnings figure, newest first, by cursor. */
export const cabinetCommissions = (
  ctx: ReportCtx,
  p: AffiliatePrincipal,
  period: Period,
  q: CommissionQuery,
) => commissionPage(ctx, filterOf(p, period, q), cursorOf(q.cursor), q.limit ?? 50)

/** All of them as CSV rows, and the file's name. */
export async function cabinetCommissionsCsv(
  ctx: ReportCtx,
  p: AffiliatePrincipal,
  period: Period,
  q: CommissionQuery,
) {
  const rows = await allCommissions(ctx, filterOf(p, period, q))
  const d = periodDays(period)
  const name = `commissions-${q.period ?? `${d.from}-${d.to}`}${q.kind ? `-${q.kind}` : ''}.csv`
  return { name, table: commissionTable(rows) }
}

export const cabinetStatements = (ctx: ReportCtx, p: AffiliatePrincipal) =>
  statementList(ctx, p.brandId, p.affiliate.id)

/**
 * One statement of the signed-in affiliate with a page of its rows (the commission rows of its period);
 * another affiliate's, or another brand's, is 404 like one that does not exist.
 */
export async function cabinetStatement(
  ctx: ReportCtx,
  p: AffiliatePrincipal,
  id: number,
  q: { cursor?: string; limit?: number },
) {
  const s = await statementOf(ctx, p.brandId, p.affiliate.id, id)
  if (!s) throw refuse('STATEMENT_NOT_FOUND', 'statement not found')
  const page = await commissionPage(
    ctx,
    { brandId: p.brandId, affiliateId: p.affiliate.id, period: s.period },
    cursorOf(q.cursor),
    q.limit ?? 50,
  )
  return { statement: statementView(s), ...page }
}

export async function cabinetStatementCsv(ctx: ReportCtx, p: AffiliatePrincipal, id: number) {
  const s = await statementOf(ctx, p.brandId, p.affiliate.id, id)
  if (!s) throw refuse('STATEMENT_NOT_FOUND', 'statement not found')
  const rows = await allCommissions(ctx, {
    brandId: p.brandId,
    affiliateId: p.affiliate.id,
    period: s.period,
  })
  return { name: `statement-${s.period}.csv`, table: commissionTable(rows) }
}
