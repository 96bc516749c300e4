import type { Consumer, DeliveredEvent, PayloadOf, Topic } from '../../kernel/events/topic'
import { AlertFired } from '../alerts'
import { PropBreached, PropPhasePassed, PropWarning } from '../prop'
import {
  MarginCall,
  TradeActivated,
  TradeCancelled,
  TradeClosed,
  TradeExpired,
  TradeStoppedOut,
} from '../trading'
import * as notices from './notices'
import { propBreach, propPassed, propWarning } from './prop-notices'
import { type NewNotification, notifyTx } from './service'

/** A consumer that writes the notification `make` gives for an event (none when it gives null). */
function notifying<T extends Topic<any>>(
  name: string,
  topic: T,
  make: (e: DeliveredEvent<PayloadOf<T>>) => NewNotification | null,
): Consumer<PayloadOf<T>> {
  return {
    name: `notifications.${name}`,
    topic,
    // what makes no notification costs no delivery (a client's own close, a cancel by the client)
    accepts: (e) => make({ id: 0, topic: topic.name, createdAt: 0, ...e }) !== null,
    async handle(event, tx) {
      const n = make(event)
      if (n) await notifyTx(tx, n, event.createdAt)
    },
  }
}

/**
 * Notifications react to what trading, alerts and prop report: stop loss and take profit, activations,
 * pending orders cancelled when reached (no margin, or the account disabled or read-only), expiries,
 * stop-outs, margin calls, fired alerts, prop breaches, warnings and passed phases. Written once per
 * event (the relay records the delivery in the transaction that writes the notification).
 */
export const notificationConsumers = (): Consumer<any>[] => [
  notifying('trade-closed', TradeClosed, (e) =>
    e.payload.reason === 'sl' || e.payload.reason === 'tp'
      ? notices.closedByTrigger(e.brandId, e.payload, e.payload.reason)
      : null,
  ),
  notifying('trade-activated', TradeActivated, (e) =>
    notices.activated(e.brandId, e.payload, e.payload.pending_cmd),
  ),
  notifying('trade-cancelled', TradeCancelled, (e) =>
    e.payload.reason === 'client' ? null : notices.cancelledUnfilled(e.brandId, e.payload, e.payload.reason),
  ),
  notifying('trade-expired', TradeExpired, (e) => notices.expired(e.brandId, e.payload)),
  notifying('stop-out', TradeStoppedOut, (e) =>
    notices.stoppedOut(e.brandId, e.payload, e.payload.margin_level),
  ),
  notifying('margin-call', MarginCall, (e) => notices.marginCall(e.brandId, e.payload)),
  notifying('alert-fired', AlertFired, (e) => notices.alertFired(e.brandId, e.payload)),
  notifying('prop-breach', PropBreached, (e) => propBreach(e.brandId, e.payload)),
  notifying('prop-warning', PropWarning, (e) => propWarning(e.brandId, e.payload)),
  notifying('prop-passed', PropPhasePassed, (e) => propPassed(e.brandId, e.payload)),
]
