import { and, asc, desc, eq, lt } from 'drizzle-orm'
import type { AffiliateCtx } from '../context'
import { refuse } from '../errors'
import { conversionFacts, conversions } from '../schema'
import { conversionView } from '../views'

export async function listConversions(
  ctx: AffiliateCtx,
  brandId: number,
  q: { affiliate_id?: number; customer_id?: number; kind?: string; before?: number; limit?: number },
) {
  const limit = q.limit ?? 100
  const rows = await ctx.db
    .select()
    .from(conversions)
    .where(
      and(
        eq(conversions.brandId, brandId),
        q.affiliate_id ? eq(conversions.affiliateId, q.affiliate_id) : undefined,
        q.customer_id ? eq(conversions.customerId, q.customer_id) : undefined,
        q.kind ? eq(conversions.kind, q.kind) : undefined,
        q.before ? lt(conversions.id, q.before) : undefined,
      ),
    )
    .orderBy(desc(conversions.id))
    .limit(limit)
  return { rows: rows.map(conversionView), next_before: rows.length === limit ? rows[rows.length - 1].id : 0 }
}

/** A conversion row with the facts of its customer that derive it (every event the ledger recorded). */
export async function conversionWithFacts(ctx: AffiliateCtx, brandId: number, id: number) {
  const [row] = await ctx.db
    .select()
    .from(conversions)
    .where(and(eq(conversions.id, id), eq(conversions.brandId, brandId)))
  if (!row) throw refuse('CONVERSION_NOT_FOUND', 'conversion not found')
  const facts = await ctx.db
    .select()
    .from(conversionFacts)
    .where(eq(conversionFacts.customerId, row.customerId))
    .orderBy(asc(conversionFacts.eventTime), asc(conversionFacts.eventId))
  return {
    conversion: conversionView(row),
    facts: facts.map((f) => ({
      kind: f.kind,
      reference: f.reference,
      value_minor: f.valueMinor,
      currency: f.currency,
      volume: f.volume,
      event_id: f.eventId,
      event_time: Math.floor(f.eventTime / 1000),
    })),
  }
}
