import type { copyLinks } from '../schema'

type Link = typeof copyLinks.$inferSelect

/**
 * A revived link's generation in its keys (`resync` grows by 2 at each revival): a revival decides anew,
 * and its trades and records must not replay those of the decision before it (a pending copy a pause
 * cancelled, then copied again at the master's fill).
 */
export const generation = (l: Pick<Link, 'resync'>) => (l.resync > 1 ? `:${l.resync}` : '')

/** Trading's idempotency key of one of a link's actions on its follower order (`open`, `close`...). */
export const tradeKey = (l: Pick<Link, 'subscriptionId' | 'masterTicket' | 'resync'>, action: string) =>
  `copy:${l.subscriptionId}:${l.masterTicket}:${action}${generation(l)}`
