import { fromMinor } from '../accounts'
import type { FiredAlert } from '../alerts'
import { describeFiring } from '../alerts'
import { CMD_NAMES, type TradePayload } from '../trading'
import type { NewNotification } from './service'

/** Notifications of trading and alert events, in words a trader reads (pure: the consumers write them). */

const side = (cmd: number) => (CMD_NAMES[cmd] ?? String(cmd)).replace('_', ' ')
const lots = (volume: number) => (volume / 100).toFixed(2)
const base = (o: TradePayload) => ({ ticket: o.ticket, symbol: o.symbol, cmd: o.cmd, volume: o.volume })

export function closedByTrigger(brandId: number, closed: TradePayload, kind: 'sl' | 'tp'): NewNotification {
  const profit = fromMinor(closed.profit_minor, closed.currency)
  const label = kind === 'sl' ? 'Stop loss' : 'Take profit'
  return {
    brandId,
    login: closed.login,
    token: kind === 'sl' ? 'order.sl' : 'order.tp',
    level: kind === 'sl' ? 'warning' : 'info',
    title: `${label} hit on ${closed.symbol}`,
    body: `${side(closed.cmd)} ${lots(closed.volume)} ${closed.symbol} #${closed.ticket} closed at ${closed.close_price} (${label.toLowerCase()} ${kind === 'sl' ? closed.sl : closed.tp}); result ${profit.toFixed(2)} ${closed.currency}.`,
    data: { ...base(closed), price: closed.close_price, profit, currency: closed.currency },
  }
}

export function activated(brandId: number, o: TradePayload, pendingCmd: number): NewNotification {
  return {
    brandId,
    login: o.login,
    token: 'order.activated',
    level: 'info',
    title: `Pending order filled on ${o.symbol}`,
    body: `${side(pendingCmd)} ${lots(o.volume)} ${o.symbol} #${o.ticket} became a ${side(o.cmd)} position at ${o.open_price}.`,
    data: { ...base(o), price: o.open_price, pending_cmd: pendingCmd },
  }
}

const UNFILLED = {
  no_money: 'the account had not enough free margin',
  trade_disabled: 'the account was disabled or read-only',
} as const

/** A pending order that reached its price and was cancelled instead of filled, with the reason why. */
export function cancelledUnfilled(
  brandId: number,
  o: TradePayload,
  reason: keyof typeof UNFILLED,
): NewNotification {
  return {
    brandId,
    login: o.login,
    token: 'order.cancelled',
    level: 'warning',
    title: `Pending order on ${o.symbol} cancelled`,
    body: `${side(o.cmd)} ${lots(o.volume)} ${o.symbol} #${o.ticket} reached ${o.open_price} but ${UNFILLED[reason]}; the order was cancelled.`,
    data: { ...base(o), price: o.open_price, reason },
  }
}

export function expired(brandId: number, o: TradePayload): NewNotification {
  return {
    brandId,
    login: o.login,
    token: 'order.expired',
    level: 'info',
    title: `Pending order on ${o.symbol} expired`,
    body: `${side(o.cmd)} ${lots(o.volume)} ${o.symbol} #${o.ticket} at ${o.open_price} expired without being filled.`,
    data: { ...base(o), price: o.open_price },
  }
}

export function stoppedOut(brandId: number, closed: TradePayload, marginLevel: number): NewNotification {
  const profit = fromMinor(closed.profit_minor, closed.currency)
  return {
    brandId,
    login: closed.login,
    token: 'margin.stop_out',
    level: 'critical',
    title: `Stop out: ${closed.symbol} position closed`,
    body: `Margin level fell to ${marginLevel.toFixed(2)}%. ${side(closed.cmd)} ${lots(closed.volume)} ${closed.symbol} #${closed.ticket} was closed at ${closed.close_price}; result ${profit.toFixed(2)} ${closed.currency}.`,
    data: {
      ...base(closed),
      price: closed.close_price,
      profit,
      currency: closed.currency,
      margin_level: marginLevel,
    },
  }
}

export function marginCall(
  brandId: number,
  m: { login: number; margin_level: number; margin_call: number; stop_out: number },
): NewNotification {
  return {
    brandId,
    login: m.login,
    token: 'margin.call',
    level: 'critical',
    title: 'Margin call',
    body: `Margin level is ${m.margin_level.toFixed(2)}%, at or below the margin call level of ${m.margin_call}%. Positions are closed from ${m.stop_out}%: add funds or reduce positions.`,
    data: { margin_level: m.margin_level, margin_call: m.margin_call, stop_out: m.stop_out },
  }
}

export function alertFired(
  brandId: number,
  a: FiredAlert & { alert_id: number; login: number },
): NewNotification {
  const d = describeFiring(a)
  return {
    brandId,
    login: a.login,
    token: 'alert.fired',
    level: 'info',
    title: d.title,
    body: d.body,
    data: {
      alert_id: a.alert_id,
      symbol: a.symbol,
      side: a.side,
      condition: a.condition,
      condition_name: d.conditionName,
      price: a.price,
    },
  }
}
