import { sql } from 'drizzle-orm'
import type { Queryable } from './db/client'

export interface OutboxEvent {
  brandId: number
  topic: string
  payload: unknown
}

/** Writes an event in the caller's transaction, so it exists exactly when the change it describes does. */
export function enqueueEvent(tx: Queryable, brandId: number, topic: string, payload: unknown, now: number) {
  return enqueueEvents(tx, [{ brandId, topic, payload }], now)
}

/**
 * Several events in one statement: they travel as one JSON parameter, so the SQL is the same whatever
 * their number (batched writers insert dozens at a time).
 */
export async function enqueueEvents(tx: Queryable, events: OutboxEvent[], now: number) {
  if (events.length === 0) return
  // positional arrays: SQLite parses a row once instead of once per `->> 'name'`
  const rows = events.map((e) => [e.brandId, e.topic, JSON.stringify(e.payload)])
  await tx.run(sql`
    insert into outbox (brand_id, topic, payload, created_at)
    select value ->> 0, value ->> 1, value ->> 2, ${now} from json_each(${JSON.stringify(rows)}) order by key`)
}
