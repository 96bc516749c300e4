import type { copyLinks } from '../schema'

type Link = typeof copyLinks.$inferSelect

/**
 * A revived link's generation in its keys (`resync` grows by 2 at each revival): a revival decides anew,
 * and its open and records must not replay those of the decision before it (a pending copy a pause
 * cancelled, then copied again at the master's fill).
 */
export const generation = (l: Pick<Link, 'resync'>) => (l.resync > 1 ? `:${l.resync}` : '')

/**
 * Trading's idempotency key of one of a link's actions on its follower order (`close`, `cancel`,
 * `pclose:<remaining>`): one follower order per link and decision at a time, so the same each time. Only
 * the open names the generation (`openKey`): a revival places a new order under the same link.
 */
export const tradeKey = (l: Pick<Link, 'subscriptionId' | 'masterTicket'>, action: string) =>
  `copy:${l.subscriptionId}:${l.masterTicket}:${action}`

/** The open's key: the link's, and its generation after a revival. */
export const openKey = (l: Pick<Link, 'subscriptionId' | 'masterTicket' | 'resync'>) =>
  `${tradeKey(l, 'open')}${generation(l)}`
