import { and, desc, eq, gte, lt, sql } from 'drizzle-orm'
import { olderThan } from '../../../kernel/db/keyset'
import type { AffiliateClicks } from '../../affiliate'
import type { AttributionCtx } from '../context'
import { clickDays, touches } from '../schema'

/**
 * An affiliate's clicks for its cabinet: touches attributed to it, bots left out (the partial index); raw
 * clicks, and unique ones (the first of a visitor on a link within the hour, not suspect).
 */
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
      // the clicks of pruned touches come from the roll-up, those still kept from the touches
      const rolled = await ctx.db
        .select()
        .from(clickDays)
        .where(
          and(
            eq(clickDays.brandId, brandId),
            eq(clickDays.affiliateId, affiliateId),
            gte(clickDays.day, Math.floor(from / 86_400_000)),
            lt(clickDays.day, Math.ceil(to / 86_400_000)),
          ),
        )
      const day = sql<number>`${touches.createdAt} / 86400000`
      const rows = await ctx.db
        .select({
          day,
          clicks: sql<number>`count(*)`,
          unique: sql<number>`coalesce(sum(${touches.uniqueClick} = 1 and ${touches.suspect} = 0), 0)`,
        })
        .from(touches)
        .where(of(brandId, affiliateId, from, to))
        .groupBy(day)
      return [
        ...rolled.map((r) => ({ day: r.day, clicks: r.clicks, unique: r.uniqueClicks })),
        ...rows.map((r) => ({ day: Number(r.day), clicks: Number(r.clicks), unique: Number(r.unique) })),
      ]
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
        unique: t.uniqueClick === 1 && t.suspect === 0,
        suspect: t.suspect === 1,
      }))
    },
  }
}
