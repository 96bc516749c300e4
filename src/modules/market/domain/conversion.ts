/** A two-sided price. */
export interface Quote {
  bid: number
  ask: number
  /** Epoch milliseconds of the tick. */
  time: number
}

/** Finds the quote of a symbol by name (e.g. "EURUSD"), or null when it is not quoted. */
export type QuoteLookup = (symbol: string) => Quote | null

/**
 * Rate that converts an amount in `from` into `to`, as MetaTrader does with cross rates: the direct pair
 * FROMTO (multiply by its bid), the inverse pair TOFROM (divide by its ask), else through USD. The bid/ask
 * choice is the conservative one for the broker. Null when no chain of quoted pairs exists.
 */
export function conversionRate(from: string, to: string, quotes: QuoteLookup): number | null {
  if (from === to) return 1
  const direct = quotes(from + to)
  if (direct && direct.bid > 0) return direct.bid
  const inverse = quotes(to + from)
  if (inverse && inverse.ask > 0) return 1 / inverse.ask
  if (from !== 'USD' && to !== 'USD') {
    const a = conversionRate(from, 'USD', quotes)
    const b = conversionRate('USD', to, quotes)
    if (a !== null && b !== null) return a * b
  }
  return null
}
