import { type SQL, sql } from 'drizzle-orm'
import type { Queryable } from '../db/db'

/** An event still to come to a consumer (`undeliveredEvents`): its id, topic and payload (JSON text). */
export interface EventToCome {
  id: number
  topic: string
  payload: string
}

/** Keys per statement: a batch of 2,000 logins is read in a few statements, far below SQLite's limit. */
const KEYS_PER_READ = 500

/**
 * The events of one of `topics` whose payload holds one of `values` at `path` (`$.login`), and meet
 * `also`, that `consumers` (their exact names) have not had yet: written and not delivered to any of them
 * (their partial index of undelivered rows), and with `parked`, also those parked for one of them in
 * `dead_letters` and not sent back yet (had but not handled: what they would have written is still to
 * come when staff retry them; the retry makes them undelivered again, so one is never both). What a
 * module that keeps its own view of another's changes (copy trading's capital of a balance, the results
 * of its copies) asks before it weighs that view against the other's current state; a batch of keys is
 * one read per `KEYS_PER_READ`. `also` is a condition on the row `o`, naming only `o.topic` and
 * `o.payload` (an outbox row or a parked one). Only events the consumers want belong here: one they pass
 * over gets no delivery row, and waits while another consumer's delivery does. At most `limit` rows.
 */
export async function undeliveredEvents(
  q: Pick<Queryable, 'all'>,
  o: {
    consumers: readonly string[]
    topics: readonly string[]
    path: string
    values: readonly (number | string)[]
    also?: SQL
    parked?: boolean
    limit?: number
  },
): Promise<EventToCome[]> {
  if (o.values.length === 0 || o.consumers.length === 0 || o.topics.length === 0) return []
  const list = (xs: readonly (number | string)[]) =>
    sql.join(
      xs.map((x) => sql`${x}`),
      sql`, `,
    )
  const also = o.also ?? sql`1`
  const limit = o.limit === undefined ? sql`` : sql` limit ${o.limit}`
  const out: EventToCome[] = []
  for (let i = 0; i < o.values.length; i += KEYS_PER_READ) {
    const values = o.values.slice(i, i + KEYS_PER_READ)
    const undelivered = sql`select o.id as id, o.topic as topic, o.payload as payload from outbox o
      where o.dispatched_at is null
        and o.topic in (${list(o.topics)})
        and json_extract(o.payload, ${o.path}) in (${list(values)})
        and ${also}
        and not exists (select 1 from event_deliveries d
          where d.event_id = o.id and d.consumer in (${list(o.consumers)}))`
    const parked = sql`select o.event_id as id, o.topic as topic, o.payload as payload from dead_letters o
      where o.retried_at is null
        and o.consumer in (${list(o.consumers)})
        and o.topic in (${list(o.topics)})
        and json_extract(o.payload, ${o.path}) in (${list(values)})
        and ${also}`
    const rows = await q.all<EventToCome>(
      o.parked ? sql`${undelivered} union ${parked}${limit}` : sql`${undelivered}${limit}`,
    )
    for (const r of rows) out.push({ id: Number(r.id), topic: String(r.topic), payload: String(r.payload) })
    if (o.limit !== undefined && out.length >= o.limit) return out.slice(0, o.limit)
  }
  return out
}

/**
 * Whether an event of one of `topics` whose payload holds `value` at `path`, and meets `also` (a
 * condition on the row `o`), is written and not yet had by one of `consumers`: `undeliveredEvents`, one
 * row.
 */
export async function undeliveredTo(
  q: Pick<Queryable, 'all'>,
  consumers: readonly string[],
  topics: readonly string[],
  path: string,
  value: number | string,
  also: SQL = sql`1`,
) {
  return (await undeliveredEvents(q, { consumers, topics, path, values: [value], also, limit: 1 })).length > 0
}
