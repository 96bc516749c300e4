import { fromMinor } from '../accounts'
import type { OrderRow } from './book/positions'
import { CMD_NAMES } from './domain/checks'
import type { TradePayload } from './events'

/** An order or position as the API shows it (prices in the symbol's digits, money in the account currency). */
export function orderView(o: OrderRow, currency: string, live?: { profit: number; closePrice: number }) {
  return {
    order: o.ticket,
    login: o.login,
    symbol: o.symbol,
    cmd: o.cmd,
    type: CMD_NAMES[o.cmd] ?? String(o.cmd),
    state: o.state,
    volume: o.volume,
    open_price: o.openPrice,
    open_time: Math.floor(o.openTime / 1000),
    sl: o.sl,
    tp: o.tp,
    expiration: o.expiration,
    commission: fromMinor(o.commission, currency),
    storage: fromMinor(o.storage, currency),
    profit: live ? live.profit : fromMinor(o.profit, currency),
    close_price: live ? live.closePrice : o.closePrice,
    close_time: Math.floor(o.closeTime / 1000),
    close_reason: o.closeReason,
    comment: o.comment,
    parent: o.parent ?? 0,
  }
}

/** The payload of a trade event (trading/events.ts): copy trading and notifications consume it. */
export function tradeEvent(o: OrderRow, currency: string): TradePayload {
  return {
    ticket: o.ticket,
    login: o.login,
    symbol: o.symbol,
    cmd: o.cmd,
    volume: o.volume,
    state: o.state,
    open_price: o.openPrice,
    open_time: o.openTime,
    sl: o.sl,
    tp: o.tp,
    close_price: o.closePrice,
    close_time: o.closeTime,
    close_reason: o.closeReason,
    profit_minor: o.profit,
    commission_minor: o.commission,
    storage_minor: o.storage,
    parent: o.parent,
    currency,
  }
}
