import { getTableName } from 'drizzle-orm'
import { insertRows } from './db/bulk-insert'
import type { Queryable } from './db/client'
import { outbox } from './outbox-schema'

export interface OutboxEvent {
  brandId: number
  topic: string
  payload: unknown
}

/** Writes an event in the caller's transaction, so it exists exactly when the change it describes does. */
export function enqueueEvent(tx: Queryable, brandId: number, topic: string, payload: unknown, now: number) {
  return enqueueEvents(tx, [{ brandId, topic, payload }], now)
}

const COLUMNS = [outbox.brandId, outbox.topic, outbox.payload, outbox.createdAt].map((c) => c.name)

/** Several events with multi-row statements (batched writers insert dozens at a time). */
export async function enqueueEvents(tx: Queryable, events: OutboxEvent[], now: number) {
  if (events.length === 0) return
  await insertRows(
    tx,
    getTableName(outbox),
    COLUMNS,
    events.map((e) => [e.brandId, e.topic, JSON.stringify(e.payload), now]),
  )
}
