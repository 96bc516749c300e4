import { sql } from 'drizzle-orm'
import type { AttributionCtx } from '../context'
import { CLICK_SOURCES } from './clicks'

const DAY = 86_400_000
/** Touches deleted per transaction: a pass never holds the write lock for long. */
const CHUNK = 5_000

/**
 * Prunes touches older than the retention (whole UTC days), never one a registration's decision or an
 * install points to, after adding their clicks (bots, installs and registration bodies left out) to the daily roll-up the cabinet's funnel
 * reads for those days. Idempotent per day: a day is rolled up in the same transaction that deletes its
 * touches, so a rerun finds them gone. The number of touches deleted.
 */
export async function pruneTouches(ctx: AttributionCtx, now: number) {
  const cutoff = retentionCutoff(ctx, now)
  let deleted = 0
  for (;;) {
    const n = await ctx.db.transaction(async (tx) => {
      const ids = (await tx.all(sql`
        select id from attribution_touches t
        where t.created_at < ${cutoff}
          and not exists (select 1 from attribution_decisions d where d.touch_id = t.id)
          and not exists (select 1 from attribution_installs i where i.touch_id = t.id)
        order by t.id limit ${CHUNK}`)) as { id: number }[]
      if (ids.length === 0) return 0
      const list = sql.join(
        ids.map((r) => sql`${Number(r.id)}`),
        sql`,`,
      )
      await tx.run(sql`
        insert into attribution_click_days (brand_id, affiliate_id, day, clicks, unique_clicks)
        select brand_id, affiliate_id, created_at / ${DAY}, count(*),
               coalesce(sum(unique_click = 1 and suspect = 0), 0)
        from attribution_touches
        where id in (${list}) and affiliate_id is not null and bot = 0
          and source in (${sql.join(
            CLICK_SOURCES.map((x) => sql`${x}`),
            sql`,`,
          )})
        group by brand_id, affiliate_id, created_at / ${DAY}
        on conflict (brand_id, affiliate_id, day) do update set
          clicks = clicks + excluded.clicks, unique_clicks = unique_clicks + excluded.unique_clicks`)
      await tx.run(sql`delete from attribution_touches where id in (${list})`)
      return ids.length
    })
    deleted += n
    if (n < CHUNK) break
  }
  if (deleted > 0) ctx.logger.log('info', 'attribution touches pruned', { deleted, before: cutoff })
  return deleted
}

/** The first instant still kept touch by touch: retention days back (at least the window), a day start. */
function retentionCutoff(ctx: AttributionCtx, now: number) {
  const days = Math.max(ctx.retentionDays, Math.ceil(ctx.windowMs / DAY))
  return Math.floor(now / DAY) * DAY - days * DAY
}
