import { and, desc, eq, gte, lt, sql } from 'drizzle-orm'
import { olderThan } from '../../../kernel/db/keyset'
import type { AffiliateClicks } from '../../affiliate'
import type { AttributionCtx } from '../context'
import { touches } from '../schema'

/** An affiliate's clicks for its cabinet: touches attributed to it, bots left out (the partial index). */
export function affiliateClicks(ctx: AttributionCtx): AffiliateClicks {
  const of = (brandId: number, affiliateId: number, from: number, to: number) =>
    and(
      eq(touches.brandId, brandId),
      eq(touches.affiliateId, affiliateId),
      gte(touches.createdAt, from),
      lt(touches.createdAt, to),
      eq(touches.bot, 0),
    )
  return {
    async perDay(brandId, affiliateId, from, to) {
      await ctx.touchWriter.flush()
      const day = sql<number>`${touches.createdAt} / 86400000`
      const rows = await ctx.db
        .select({ day, clicks: sql<number>`count(*)` })
        .from(touches)
        .where(of(brandId, affiliateId, from, to))
        .groupBy(day)
      return rows.map((r) => ({ day: Number(r.day), clicks: Number(r.clicks) }))
    },
    async list(brandId, affiliateId, from, to, below, limit) {
      await ctx.touchWriter.flush()
      const rows = await ctx.db
        .select()
        .from(touches)
        .where(and(of(brandId, affiliateId, from, to), olderThan(touches.createdAt, touches.id, below)))
        .orderBy(desc(touches.createdAt), desc(touches.id))
        .limit(limit)
      return rows.map((t) => ({
        id: t.id,
        time: t.createdAt,
        source: t.source,
        link_id: t.linkId,
        landing_path: t.landingPath,
        values: JSON.parse(t.params) as Record<string, string>,
      }))
    },
  }
}
