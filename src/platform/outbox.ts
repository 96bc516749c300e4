import type { Queryable } from './db/client'
import { outbox } from './outbox-schema'

/** Writes an event in the caller's transaction, so it exists exactly when the change it describes does. */
export async function enqueueEvent(
  tx: Queryable,
  brandId: number,
  topic: string,
  payload: unknown,
  now: number,
) {
  await tx.insert(outbox).values({ brandId, topic, payload: JSON.stringify(payload), createdAt: now })
}
