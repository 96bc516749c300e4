import type { Clock } from '../../kernel/clock'
import type { Quote, QuoteLookup } from './domain/conversion'
import { quoteAgeOver } from './domain/quote-age'
import { isTradingOpen } from './domain/sessions'
import type { QuoteHub } from './quotes'
import { type GroupSymbol, pricedForGroup, type ReferenceData } from './reference'

/**
 * The group's quote of a symbol now (its spread settings applied), or null without a price: none yet, or
 * one the group's spread would put at 0 or below (refused as a missing price, never clamped).
 */
export async function groupPrice(quotes: QuoteHub, gs: GroupSymbol): Promise<Quote | null> {
  const raw = await quotes.get(gs.info.symbol)
  if (!raw) return null
  return pricedForGroup(raw, gs)
}

/** Every symbol's latest quote, looked up without awaiting (cross rates for conversions). */
export async function quoteLookup(quotes: QuoteHub): Promise<QuoteLookup> {
  await quotes.warmAll()
  return (s) => quotes.peek(s)
}

/** A lookup for a trade's cross rates, and the pairs it passed over as stale (see tradeLookup). */
export interface TradeLookup {
  lookup: QuoteLookup
  /** The pairs the lookup answered null for because their feed stopped, with their age in seconds. */
  staleLegs(): { symbol: string; age: number; limit: number }[]
}

/**
 * Cross rates for a fill: a pair whose market is open but whose last tick is older than its
 * `max_quote_age` is no rate (its feed has stopped; the amount converted at it would be an old price's),
 * and the lookup remembers it so the trade can answer 503 PRICE_STALE naming it. A pair outside its
 * trading session keeps its last price (the weekend's rate is Friday's close, as brokers convert).
 */
export async function tradeLookup(
  quotes: QuoteHub,
  refdata: ReferenceData,
  clock: Clock,
): Promise<TradeLookup> {
  await quotes.warmAll()
  const now = clock.now()
  const stale = new Map<string, { symbol: string; age: number; limit: number }>()
  const lookup: QuoteLookup = (symbol) => {
    const q = quotes.peek(symbol)
    if (!q) return null
    const info = refdata.symbol(symbol)
    if (!info || info.maxQuoteAge <= 0 || !isTradingOpen(info.sessionList, now)) return q
    const age = quoteAgeOver(info.maxQuoteAge, quotes.seenAt(symbol, q), now)
    if (age === null) return q
    stale.set(symbol, { symbol, age, limit: info.maxQuoteAge })
    return null
  }
  return { lookup, staleLegs: () => [...stale.values()] }
}
