/**
 * The price grid of a symbol: quotes are rounded to `digits` decimals (a point is 10^-digits), so the
 * smallest price change, `tick_size`, must be a whole number of points (at least one). A tick finer than
 * the point (0.00001 with digits 0) would have every price rounded to a grid the tick never reaches:
 * positions revalued at 1 instead of 1.1002.
 */
export function tickFitsDigits(tickSize: number, digits: number): boolean {
  const points = tickSize * 10 ** digits
  const whole = Math.round(points)
  // the stored tick is a double: 0.3 * 10^5 is 30000.000000000004
  return whole >= 1 && Math.abs(points - whole) <= 1e-9 * whole
}

/**
 * The field of a change to a symbol's price grid that would reprice what accounts hold, or null: fewer
 * digits round every quote (and so every open position's close price) to a coarser grid, and a new
 * tick_size changes the profit of futures positions (profit per tick). More digits only make prices finer
 * (every price of the old grid is one of the new) and are no such change.
 */
export function gridChangeRepricing(
  current: { digits: number; tickSize: number },
  next: { digits: number; tickSize: number },
): 'digits' | 'tick_size' | null {
  if (next.digits < current.digits) return 'digits'
  if (next.tickSize !== current.tickSize) return 'tick_size'
  return null
}
