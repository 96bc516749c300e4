import { z } from 'zod'
import { defineTopic } from '../../kernel/events/topic'

/** An order or position as events carry it: money in minor units of the account `currency`, times in ms. */
export const TradePayload = z.object({
  ticket: z.number().int(),
  login: z.number().int(),
  symbol: z.string(),
  cmd: z.number().int(),
  volume: z.number().int(),
  state: z.string(),
  open_price: z.number(),
  open_time: z.number().int(),
  sl: z.number(),
  tp: z.number(),
  close_price: z.number(),
  close_time: z.number().int(),
  close_reason: z.string(),
  profit_minor: z.number().int(),
  commission_minor: z.number().int(),
  storage_minor: z.number().int(),
  parent: z.number().int().nullable(),
  currency: z.string(),
})
export type TradePayload = z.infer<typeof TradePayload>

const Quote = z.object({ bid: z.number(), ask: z.number(), time: z.number() })

export const TradeOpened = defineTopic('trade.opened', TradePayload)
export const TradeModified = defineTopic('trade.modified', TradePayload)
/**
 * A position closed in full: by the client or a group close, by its stop loss or take profit, or by a
 * risk limit of the account (a prop challenge's loss limit: every position at the breaching quote).
 */
export const TradeClosed = defineTopic(
  'trade.closed',
  TradePayload.extend({ reason: z.enum(['client', 'sl', 'tp', 'group_close', 'risk_limit']) }),
)
/** Part of a position closed: the payload is the part still open, `closed_ticket` the closed part. */
export const TradePartiallyClosed = defineTopic(
  'trade.partially_closed',
  TradePayload.extend({ closed_ticket: z.number().int() }),
)
/** A position closed by the stop-out at `margin_level` (percent). */
export const TradeStoppedOut = defineTopic(
  'trade.stopped_out',
  TradePayload.extend({ reason: z.literal('stopout'), margin_level: z.number() }),
)
/** A pending order reached its price and became a position (`pending_cmd` was its type). */
export const TradeActivated = defineTopic(
  'trade.activated',
  TradePayload.extend({ pending_cmd: z.number().int(), quote: Quote }),
)
/**
 * A pending order cancelled: by the client, or when it reached its price without the margin (`no_money`)
 * or on an account that may not trade (disabled or read-only: `trade_disabled`).
 */
export const TradeCancelled = defineTopic(
  'trade.cancelled',
  TradePayload.extend({ reason: z.enum(['client', 'no_money', 'trade_disabled']), quote: Quote.optional() }),
)
export const TradeExpired = defineTopic('trade.expired', TradePayload)
/** The daily rollover charged a position's swap (`charge_minor`, account currency) up to `day` (epoch days). */
export const SwapCharged = defineTopic(
  'trade.swap_charged',
  TradePayload.extend({ charge_minor: z.number().int(), day: z.number().int() }),
)
/** An account's margin level reached its group's margin call level (once per episode). */
export const MarginCall = defineTopic(
  'margin.call',
  z.object({
    login: z.number().int(),
    margin_level: z.number(),
    margin_call: z.number(),
    stop_out: z.number(),
  }),
)
