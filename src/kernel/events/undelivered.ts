import { type SQL, sql } from 'drizzle-orm'
import type { Queryable } from '../db/db'

/**
 * Whether an event of one of `topics` whose payload holds `value` at `path` (`$.login`), and meets `also`
 * (a condition on the row `o`), is written and not yet had by a consumer whose name starts with
 * `consumerPrefix` (delivered or parked): what a module that keeps its own view of another's changes (copy
 * trading's capital of a balance) asks before it weighs that view against the other's current state. Only
 * events the consumer wants belong here: one it passes over gets no delivery row, and waits while another
 * consumer's delivery does. Reads undelivered rows only (their partial index).
 */
export async function undeliveredTo(
  q: Pick<Queryable, 'all'>,
  consumerPrefix: string,
  topics: readonly string[],
  path: string,
  value: number | string,
  also: SQL = sql`1`,
) {
  const rows = await q.all(sql`
    select 1 from outbox o
    where o.dispatched_at is null
      and o.topic in (${sql.join(
        topics.map((t) => sql`${t}`),
        sql`, `,
      )})
      and json_extract(o.payload, ${path}) = ${value}
      and ${also}
      and not exists (select 1 from event_deliveries d
        where d.event_id = o.id and d.consumer like ${`${consumerPrefix}%`})
    limit 1`)
  return rows.length > 0
}

/**
 * Whether an event of `topic` whose payload holds `value` at `path` (and meets `also`, a condition on the
 * parked row `p`) is parked for `consumer` in `dead_letters` and not sent back yet: had, but not handled,
 * so what it would have written is still to come when staff retry it (the retry makes it undelivered
 * again: `undeliveredTo`).
 */
export async function parkedFor(
  q: Pick<Queryable, 'all'>,
  consumer: string,
  topic: string,
  path: string,
  value: number | string,
  also: SQL = sql`1`,
) {
  const rows = await q.all(sql`
    select 1 from dead_letters p
    where p.consumer = ${consumer} and p.topic = ${topic} and p.retried_at is null
      and json_extract(p.payload, ${path}) = ${value}
      and ${also}
    limit 1`)
  return rows.length > 0
}
