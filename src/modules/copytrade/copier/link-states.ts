import { and, eq, or } from 'drizzle-orm'
import { copyLinks } from '../schema'

/**
 * The reason of a pending copy a pause cancels (service/subscription-status.ts): only cancelled, never
 * closed (one that filled meanwhile stays, close-copy.ts), and decided again at the master's fill or the
 * resume (`revivable`).
 */
export const PAUSE_CANCELLED = 'SUBSCRIPTION_PAUSED'

/**
 * Links that copied nothing the follower holds, to be decided again (a resume's resync, a master's fill):
 * skipped for a reason that may no longer hold, or their pending copy cancelled by a pause. One the
 * follower ended by closing its copy never is.
 */
export const revivable = or(
  eq(copyLinks.status, 'skipped'),
  and(eq(copyLinks.status, 'closed'), eq(copyLinks.reason, PAUSE_CANCELLED)),
)
