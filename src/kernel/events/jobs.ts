import type { Clock } from '../clock'
import type { Db } from '../db/client'
import type { Job } from '../jobs/job'
import type { Relay } from './relay'

const CLEANUP_CHUNK = 5000

/**
 * Deletes dispatched events older than the retention, with their delivery rows, a chunk per transaction
 * (old rows are the first ids: the walk stops as soon as a chunk is found). Returns how many went.
 */
async function cleanupEvents(db: Db, clock: Clock, retentionMs: number) {
  const cutoff = clock.now() - retentionMs
  let removed = 0
  for (;;) {
    const n = await db.transaction(async (tx) => {
      const ids = (
        await tx.execute({
          sql: 'select id from outbox where created_at < ? and dispatched_at is not null order by id limit ?',
          args: [cutoff, CLEANUP_CHUNK],
        })
      ).rows.map((r) => Number(r[0]))
      if (ids.length === 0) return 0
      const list = JSON.stringify(ids)
      await tx.execute({
        sql: 'delete from event_deliveries where event_id in (select value from json_each(?))',
        args: [list],
      })
      await tx.execute({
        sql: 'delete from outbox where id in (select value from json_each(?))',
        args: [list],
      })
      return ids.length
    })
    removed += n
    if (n < CLEANUP_CHUNK) return removed
    await new Promise((r) => setImmediate(r))
  }
}

/**
 * Events one scheduled run at the edge relays: a Worker's cron invocation has 1,000 subrequests for all
 * the jobs due in it (this one, the cleanup, the cluster jobs it runs), and an event costs about 3.5 (its
 * claim, its consumers' transactions, their cache and bus calls); draining a backlog there ran past the
 * limit. The edge alone relays at most this many a minute: the Bun engine beside the Workers (the
 * documented deployment) relays every second and keeps up. A server drains all that is due.
 */
export const EDGE_RELAY_BATCH = 100

/** The kernel's jobs: the relay's poll (events of other instances, retries that came due) and cleanup. */
export function eventJobs(
  db: Db,
  clock: Clock,
  relay: Pick<Relay, 'drain' | 'pass'>,
  retentionMs: number,
  edge = false,
): Job[] {
  return [
    {
      name: 'events.relay',
      every: 1000,
      scope: 'instance',
      run: edge ? () => relay.pass(EDGE_RELAY_BATCH) : () => relay.drain(),
    },
    {
      name: 'events.cleanup',
      every: 10 * 60_000,
      scope: 'cluster',
      run: () => cleanupEvents(db, clock, retentionMs),
    },
  ]
}
