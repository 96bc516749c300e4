import { and, desc, eq, gte, inArray, lt, type SQL, sql } from 'drizzle-orm'
import { olderThan } from '../../../kernel/db/keyset'
import type { AffiliateClicks, ReportDimension } from '../../affiliate'
import type { AttributionCtx } from '../context'
import { clickDays, touches } from '../schema'

const DAY = 86_400_000

/** What a touch is grouped by in a report (sub-ids from its values, as the tracker set them). */
const GROUP_BY: Record<ReportDimension, SQL<string | number | null>> = {
  day: sql`${touches.createdAt} / ${sql.raw(String(DAY))}`,
  link: sql`${touches.linkId}`,
  sub1: sql`json_extract(${touches.params}, '$.sub1')`,
  sub2: sql`json_extract(${touches.params}, '$.sub2')`,
  sub3: sql`json_extract(${touches.params}, '$.sub3')`,
  sub4: sql`json_extract(${touches.params}, '$.sub4')`,
  sub5: sql`json_extract(${touches.params}, '$.sub5')`,
  country: sql`${touches.country}`,
  landing: sql`${touches.landingPath}`,
}

const dayKey = (day: number) => new Date(day * DAY).toISOString().slice(0, 10)

/** Touches that are clicks: a link followed or a page opened with values; an install or a registration's body is not. */
export const CLICK_SOURCES = ['click', 'page']

/**
 * An affiliate's clicks for its cabinet: touches attributed to it that are clicks, bots left out (the
 * partial index attribution_touches_affiliate: `bot = 0` is written literally so the planner can use it);
 * raw clicks, and unique ones (the first of a visitor on a link within the hour, not suspect).
 */
export function affiliateClicks(ctx: AttributionCtx): AffiliateClicks {
  const of = (brandId: number, affiliateId: number, from: number, to: number) =>
    and(
      eq(touches.brandId, brandId),
      eq(touches.affiliateId, affiliateId),
      gte(touches.createdAt, from),
      lt(touches.createdAt, to),
      sql`${touches.bot} = 0`,
      inArray(touches.source, CLICK_SOURCES),
    )
  const unique = sql<number>`coalesce(sum(${touches.uniqueClick} = 1 and ${touches.suspect} = 0), 0)`
  /** the clicks of pruned touches, per day (the roll-up the retention job writes) */
  const rolledUp = (brandId: number, affiliateId: number, from: number, to: number) =>
    ctx.db
      .select()
      .from(clickDays)
      .where(
        and(
          eq(clickDays.brandId, brandId),
          eq(clickDays.affiliateId, affiliateId),
          gte(clickDays.day, Math.floor(from / DAY)),
          lt(clickDays.day, Math.ceil(to / DAY)),
        ),
      )
  return {
    async perDay(brandId, affiliateId, from, to) {
      await ctx.touchWriter.flush()
      // the clicks of pruned touches come from the roll-up, those still kept from the touches
      const rolled = await rolledUp(brandId, affiliateId, from, to)
      const day = sql<number>`${touches.createdAt} / 86400000`
      const rows = await ctx.db
        .select({ day, clicks: sql<number>`count(*)`, unique })
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
        country: t.country,
        values: JSON.parse(t.params) as Record<string, string>,
        unique: t.uniqueClick === 1 && t.suspect === 0,
        suspect: t.suspect === 1,
      }))
    },
    async grouped(brandId, affiliateId, from, to, dimension) {
      await ctx.touchWriter.flush()
      // its own entries only: a name its prototype answers (`constructor`) is no dimension
      if (!Object.hasOwn(GROUP_BY, dimension)) return []
      const key = GROUP_BY[dimension]
      const rows = await ctx.db
        .select({ key, clicks: sql<number>`count(*)`, unique })
        .from(touches)
        .where(of(brandId, affiliateId, from, to))
        .groupBy(key)
      const out = new Map<string, { key: string; clicks: number; unique: number }>()
      const add = (k: string, clicks: number, uniq: number) => {
        const g = out.get(k) ?? { key: k, clicks: 0, unique: 0 }
        g.clicks += clicks
        g.unique += uniq
        out.set(k, g)
      }
      for (const r of rows) {
        const k = r.key === null ? '' : dimension === 'day' ? dayKey(Number(r.key)) : String(r.key)
        add(k, Number(r.clicks), Number(r.unique))
      }
      // pruned touches are kept as daily totals only: they count by day, no other dimension knows them
      if (dimension === 'day')
        for (const r of await rolledUp(brandId, affiliateId, from, to))
          add(dayKey(r.day), r.clicks, r.uniqueClicks)
      return [...out.values()]
    },
  }
}
