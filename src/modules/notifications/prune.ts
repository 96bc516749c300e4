import { sql } from 'drizzle-orm'
import { epochSeconds } from '../../kernel/clock'
import type { Kernel } from '../../kernel/kernel'

/** Rows one statement removes: a short write, beside the consumers' inserts. */
const PAGE = 2_000
/** Statements one run of the job may take on the Bun server. */
const PAGES_PER_RUN = 50
/**
 * At the edge (a cron invocation's 1,000 subrequests are shared by every job due in it): 10 a run, four runs
 * an hour, 80,000 rows an hour, more than a brand's busiest repeat alerts write (one a minute each).
 */
const EDGE_PAGES_PER_RUN = 10

/**
 * Removes notifications written more than `keepMs` ago (job `notifications.prune`). A notification's
 * `create_time` is the time of the event it reports, delivered within moments of it, so the oldest are the
 * lowest ids: each statement looks at the
 * `PAGE` lowest ids only (the primary key, no index on the time) and removes those past the retention, so
 * a run reads little more than it removes and stops at the first page with none past it. One written out
 * of order (a late delivery) is removed by a later run, once the rows before it are gone.
 */
export async function pruneNotifications(
  ctx: Pick<Kernel, 'db' | 'edge' | 'logger'>,
  now: number,
  keepMs: number,
) {
  const before = epochSeconds(now - keepMs)
  let removed = 0
  for (let page = 0; page < (ctx.edge ? EDGE_PAGES_PER_RUN : PAGES_PER_RUN); page++) {
    const gone = await ctx.db.run(sql`delete from notifications where id in (
      select id from (select id, create_time from notifications order by id limit ${PAGE})
      where create_time < ${before})`)
    const n = Number(gone.rowsAffected ?? 0)
    removed += n
    // a page with nothing past the retention: the rest is younger (a late row waits for those before it)
    if (n === 0) break
  }
  if (removed > 0) ctx.logger.log('info', 'notifications pruned', { removed })
  return { removed }
}
