import { and, eq, gt } from 'drizzle-orm'
import type { Db, Tx } from '../../../kernel/db/client'
import { postbacks } from '../schema'

/** The longest wait of a failure's backoff (`backoffMs`): a pending postback due later than that is parked. */
export const BACKOFF_MAX_MS = 3_600_000

/**
 * How long a postback refused by a setting (no `postback_url`, no signing key, a host off the brand's
 * allowlist) waits for it to be fixed, from the first refusal: parked until then, it is dead after.
 */
export const SETTING_WAIT_MS = 30 * 86_400_000

/** The `last_error` of a postback whose affiliate has no `postback_url` (cleared: parked until one is saved). */
export const NO_URL = 'no postback_url: the affiliate receives no postbacks'

/**
 * Wakes the pending postbacks parked by a refusal of a setting (`of`: an affiliate's, a brand's) once
 * that setting changed (a signing key created, the `postback_url` or the brand's allowlist saved): they are
 * due at once, their `last_error` cleared (a refusal after the fix is a first one: parked 30 days from
 * then). A failure's backoff (an hour at most) is left as it is.
 */
export async function wakeParkedPostbacks(
  db: Db | Tx,
  of: { affiliateId: number } | { brandId: number },
  now: number,
) {
  const matching =
    'affiliateId' in of ? eq(postbacks.affiliateId, of.affiliateId) : eq(postbacks.brandId, of.brandId)
  await db
    .update(postbacks)
    .set({ nextAt: now, lastError: '' })
    .where(and(eq(postbacks.status, 'pending'), gt(postbacks.nextAt, now + BACKOFF_MAX_MS), matching))
}
