/**
 * The trading services, one use case a file (issue 42): open, modify, close, close a group, cancel, the
 * active list and the history; what they share is in shared.ts.
 */
export { cancelOrder } from './cancel'
export { closeOrder } from './close'
export { closeGroup } from './close-group'
export { history } from './history'
export { listActive } from './list'
export { modifyOrder } from './modify'
export { openFor, openOrder } from './open'
export { type Actor, actorName, type OpenInput, type TradingServices } from './shared'
