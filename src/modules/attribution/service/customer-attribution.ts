import { and, eq, inArray } from 'drizzle-orm'
import type { AttributionCtx } from '../context'
import { refuse } from '../errors'
import { decisions, touches } from '../schema'

type TouchRow = typeof touches.$inferSelect

const touchView = (t: TouchRow) => ({
  id: t.id,
  source: t.source,
  visitor_id: t.visitorId,
  installation_id: t.installationId,
  affiliate_id: t.affiliateId,
  link_id: t.linkId,
  values: JSON.parse(t.params) as Record<string, string>,
  direct: t.direct === 1,
  bot: t.bot === 1,
  landing_path: t.landingPath,
  referrer: t.referrer,
  created_time: Math.floor(t.createdAt / 1000),
})

/** A customer's attribution for staff: the record, the touch that won, every touch considered, the rule. */
export async function customerAttribution(ctx: AttributionCtx, brandId: number, customerId: number) {
  const c = await ctx.accounts.read.customerIn(brandId, customerId)
  if (!c) throw refuse('CUSTOMER_NOT_FOUND', 'customer not found')
  const record = c.attribution ? (JSON.parse(c.attribution) as Record<string, string>) : null
  const decisionId = Number(record?.decision_id)
  const [d] = Number.isSafeInteger(decisionId)
    ? await ctx.db
        .select()
        .from(decisions)
        .where(and(eq(decisions.id, decisionId), eq(decisions.brandId, brandId)))
    : []
  const ids: number[] = d ? JSON.parse(d.considered) : []
  const rows = ids.length
    ? await ctx.db
        .select()
        .from(touches)
        .where(and(inArray(touches.id, ids), eq(touches.brandId, brandId)))
    : []
  const won = rows.find((t) => t.id === d?.touchId)
  return {
    customer_id: c.id,
    attribution: record,
    won_by: d?.wonBy ?? (record ? (record.won_by ?? 'unknown') : 'none'),
    window_days: d?.windowDays ?? Math.round(ctx.windowMs / 86_400_000),
    touch: won ? touchView(won) : null,
    considered: rows.sort((a, b) => b.createdAt - a.createdAt).map(touchView),
  }
}
