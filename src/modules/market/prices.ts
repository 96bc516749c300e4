import type { Quote, QuoteLookup } from './domain/conversion'
import type { QuoteHub } from './quotes'
import { type GroupSymbol, pricedForGroup } from './reference'

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
