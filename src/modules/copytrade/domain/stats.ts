/** A master's statistics as kept in copy_masters (minor units of the master's currency). */
interface MasterStats {
  trades: number
  wins: number
  pnlMinor: number
  volume: number
  unitValue: number
  peakUnitValue: number
  maxDrawdown: number
}

/**
 * The statistics after one closed master trade of net result `netMinor` on a balance of `balanceAfter`
 * (both minor units), kept incrementally so that a request never scans a history:
 * - ROI is time-weighted: the unit value is multiplied by 1 + net / (balance before the trade), so a
 *   deposit or a withdrawal moves the balance but not the unit value (it is not performance);
 *   ROI = unit value - 1;
 * - max drawdown is the largest fall of the unit value from its running peak, as a fraction;
 * - a win is a trade whose net result is above zero.
 */
export function afterClosedTrade(
  s: MasterStats,
  netMinor: number,
  volume: number,
  balanceAfter: number,
): MasterStats {
  const before = balanceAfter - netMinor
  const growth = before > 0 ? Math.max(0, 1 + netMinor / before) : 1
  const unitValue = s.unitValue * growth
  const peakUnitValue = Math.max(s.peakUnitValue, unitValue)
  const drawdown = peakUnitValue > 0 ? (peakUnitValue - unitValue) / peakUnitValue : 0
  return {
    trades: s.trades + 1,
    wins: s.wins + (netMinor > 0 ? 1 : 0),
    pnlMinor: s.pnlMinor + netMinor,
    volume: s.volume + volume,
    unitValue,
    peakUnitValue,
    maxDrawdown: Math.max(s.maxDrawdown, drawdown),
  }
}

/** The figures the marketplace shows, derived from the kept statistics. */
export function statsView(s: MasterStats, decimals: number) {
  return {
    roi: round(s.unitValue - 1, 6),
    pnl: s.pnlMinor / 10 ** decimals,
    win_rate: s.trades > 0 ? round(s.wins / s.trades, 4) : 0,
    max_drawdown: round(s.maxDrawdown, 6),
    avg_pnl_per_trade: s.trades > 0 ? round(s.pnlMinor / s.trades / 10 ** decimals, decimals) : 0,
    trades: s.trades,
    winning_trades: s.wins,
    losing_trades: s.trades - s.wins,
  }
}

const round = (x: number, d: number) => Math.round(x * 10 ** d) / 10 ** d
