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

/** What of a symbol decides how a change of its grid reprices what accounts hold. */
export interface GridSettings {
  digits: number
  tickSize: number
  tickValue: number
  /** 2 futures: profit is (close - open) / tick_size * tick_value * lots. */
  profitMode: number
  /** 3 CFD index: margin is lots * contract_size * price * tick_value / tick_size. */
  marginMode: number
}

const PROFIT_FUTURES = 2
const MARGIN_CFD_INDEX = 3

const sameRatio = (a: number, b: number) => Math.abs(a - b) <= 1e-12 * Math.max(Math.abs(a), Math.abs(b))

/**
 * The field of a change to a symbol's price grid that would reprice what accounts hold, or null:
 * - any new digits: quotes are rounded to them, and a point (10^-digits) is the unit of spreads, spread
 *   overrides of every brand's groups, spread_diff, stops_level, swaps in points and pip commissions, so
 *   more digits rescale all of those as much as fewer digits coarsen prices;
 * - a new tick_value / tick_size ratio on a symbol whose profit is futures, or whose margin is CFD index,
 *   before and after the change (the same formula reads the ratio): named tick_size when the request
 *   changed it, else tick_value.
 * A new tick_size of another symbol, or one with tick_value scaled alike, changes no value and is null. A
 * change of profit_mode or margin_mode reprices by itself (as contract_size does) and is the caller's to
 * allow: the ratio the request sets with it is part of the new formula, not a change of the old one.
 */
export function gridChangeRepricing(
  current: GridSettings,
  next: GridSettings,
): 'digits' | 'tick_size' | 'tick_value' | null {
  if (next.digits !== current.digits) return 'digits'
  const perTickBoth =
    (current.profitMode === PROFIT_FUTURES && next.profitMode === PROFIT_FUTURES) ||
    (current.marginMode === MARGIN_CFD_INDEX && next.marginMode === MARGIN_CFD_INDEX)
  if (!perTickBoth) return null
  if (sameRatio(next.tickValue / next.tickSize, current.tickValue / current.tickSize)) return null
  return next.tickSize !== current.tickSize ? 'tick_size' : 'tick_value'
}
