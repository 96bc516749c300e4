import { lt } from 'drizzle-orm'
import type { Db } from '../../../kernel/db/client'
import { tradeRequests } from '../schema'

/** How long an idempotency key answers its repeats: 7 days (Stripe keeps them 24 hours). */
export const REQUEST_KEYS_KEPT_MS = 7 * 86_400_000

/** Forgets the idempotency keys older than REQUEST_KEYS_KEPT_MS (trading.requests-expire). */
export async function expireRequestKeys(db: Db, now: number) {
  await db.delete(tradeRequests).where(lt(tradeRequests.createdAt, now - REQUEST_KEYS_KEPT_MS))
}
