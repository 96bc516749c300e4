import { fromMinor } from '../accounts/domain/money'
import type { NewNotification } from '../notifications/service'
import { CMD_NAMES } from './domain/checks'
import type { OrderRow } from './positions'

/** Notifications the trading back end writes for the account, in words a trader reads. */

const side = (o: OrderRow) => (CMD_NAMES[o.cmd] ?? String(o.cmd)).replace('_', ' ')
const lots = (volume: number) => (volume / 100).toFixed(2)
const base = (o: OrderRow) => ({ ticket: o.ticket, symbol: o.symbol, cmd: o.cmd, volume: o.volume })

export function closedByTrigger(closed: OrderRow, kind: 'sl' | 'tp', currency: string): NewNotification {
  const profit = fromMinor(closed.profit, currency)
  const label = kind === 'sl' ? 'Stop loss' : 'Take profit'
  return {
    brandId: closed.brandId,
    login: closed.login,
    token: kind === 'sl' ? 'order.sl' : 'order.tp',
    level: kind === 'sl' ? 'warning' : 'info',
    title: `${label} hit on ${closed.symbol}`,
    body: `${side(closed)} ${lots(closed.volume)} ${closed.symbol} #${closed.ticket} closed at ${closed.closePrice} (${label.toLowerCase()} ${kind === 'sl' ? closed.sl : closed.tp}); result ${profit.toFixed(2)} ${currency}.`,
    data: { ...base(closed), price: closed.closePrice, profit, currency },
  }
}

export function activated(o: OrderRow, pendingCmd: number): NewNotification {
  return {
    brandId: o.brandId,
    login: o.login,
    token: 'order.activated',
    level: 'info',
    title: `Pending order filled on ${o.symbol}`,
    body: `${(CMD_NAMES[pendingCmd] ?? '').replace('_', ' ')} ${lots(o.volume)} ${o.symbol} #${o.ticket} became a ${side(o)} position at ${o.openPrice}.`,
    data: { ...base(o), price: o.openPrice, pending_cmd: pendingCmd },
  }
}

export function cancelledNoMoney(o: OrderRow): NewNotification {
  return {
    brandId: o.brandId,
    login: o.login,
    token: 'order.cancelled',
    level: 'warning',
    title: `Pending order on ${o.symbol} cancelled`,
    body: `${side(o)} ${lots(o.volume)} ${o.symbol} #${o.ticket} reached ${o.openPrice} but the account had not enough free margin; the order was cancelled.`,
    data: { ...base(o), price: o.openPrice, reason: 'no_money' },
  }
}

export function expired(o: OrderRow): NewNotification {
  return {
    brandId: o.brandId,
    login: o.login,
    token: 'order.expired',
    level: 'info',
    title: `Pending order on ${o.symbol} expired`,
    body: `${side(o)} ${lots(o.volume)} ${o.symbol} #${o.ticket} at ${o.openPrice} expired without being filled.`,
    data: { ...base(o), price: o.openPrice },
  }
}

export function stoppedOut(closed: OrderRow, marginLevel: number, currency: string): NewNotification {
  const profit = fromMinor(closed.profit, currency)
  return {
    brandId: closed.brandId,
    login: closed.login,
    token: 'margin.stop_out',
    level: 'critical',
    title: `Stop out: ${closed.symbol} position closed`,
    body: `Margin level fell to ${marginLevel.toFixed(2)}%. ${side(closed)} ${lots(closed.volume)} ${closed.symbol} #${closed.ticket} was closed at ${closed.closePrice}; result ${profit.toFixed(2)} ${currency}.`,
    data: { ...base(closed), price: closed.closePrice, profit, currency, margin_level: marginLevel },
  }
}

export function marginCall(
  brandId: number,
  login: number,
  marginLevel: number,
  callLevel: number,
  stopOut: number,
): NewNotification {
  return {
    brandId,
    login,
    token: 'margin.call',
    level: 'critical',
    title: 'Margin call',
    body: `Margin level is ${marginLevel.toFixed(2)}%, at or below the margin call level of ${callLevel}%. Positions are closed from ${stopOut}%: add funds or reduce positions.`,
    data: { margin_level: marginLevel, margin_call: callLevel, stop_out: stopOut },
  }
}
