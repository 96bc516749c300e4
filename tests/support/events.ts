import type { PayloadOf } from '../../src/kernel/events/topic'
import type { TradeClosed } from '../../src/modules/trading'

/** The payload of a client's close of a position (tests that feed trading's events to their consumers). */
export const closedTrade = (o: {
  ticket: number
  login: number
  volume: number
  at: number
}): PayloadOf<typeof TradeClosed> => ({
  ticket: o.ticket,
  login: o.login,
  symbol: 'EURUSD',
  cmd: 0,
  volume: o.volume,
  state: 'closed',
  open_price: 1.1,
  open_time: o.at - 60_000,
  sl: 0,
  tp: 0,
  close_price: 1.1,
  close_time: o.at,
  close_reason: 'client',
  profit_minor: 0,
  commission_minor: 0,
  storage_minor: 0,
  parent: null,
  currency: 'USD',
  reason: 'client',
})
