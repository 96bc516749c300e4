import type { Quote } from './conversion'

export interface SpreadSettings {
  digits: number
  /** Spread in points; 0 keeps the source spread. A group override replaces the symbol's value. */
  spread: number
  /** Shift of the spread in points: positive moves both sides up. */
  spreadBalance: number
  /** Group widening in points, split between the two sides. */
  spreadDiff: number
}

const round = (x: number, digits: number) => Math.round(x * 10 ** digits) / 10 ** digits

/**
 * The price a group sees (pure). With a fixed spread the quote is rebuilt around the source mid:
 * bid = mid - spread/2 + balance, ask = bid + spread (points); then the group's spread_diff widens it
 * (half on each side, the odd point on the ask). Rounded to the symbol's digits.
 */
export function groupQuote(raw: Quote, s: SpreadSettings): Quote {
  const pt = 10 ** -s.digits
  let bid = raw.bid
  let ask = raw.ask
  if (s.spread > 0) {
    const mid = (raw.bid + raw.ask) / 2
    bid = mid - (s.spread / 2) * pt + s.spreadBalance * pt
    ask = bid + s.spread * pt
  } else if (s.spreadBalance !== 0) {
    bid += s.spreadBalance * pt
    ask += s.spreadBalance * pt
  }
  if (s.spreadDiff > 0) {
    bid -= Math.floor(s.spreadDiff / 2) * pt
    ask += Math.ceil(s.spreadDiff / 2) * pt
  }
  return { bid: round(bid, s.digits), ask: round(ask, s.digits), time: raw.time }
}

/**
 * Whether a group's quote is a price at all: a fixed spread (or spread balance) rebuilt around a tiny mid
 * can put a side at 0 or below. Such a quote is no price (as a missing one): nothing fills at it, it is not
 * shown, and it is never clamped to something that looks like one.
 */
export const isPositiveQuote = (q: Quote) => q.bid > 0 && q.ask > 0
