import type { QuoteLookup } from '../../market/pure'
import { type SymbolSpec, swapCharge } from './formulas'

export const DAY_MS = 86_400_000
/** The UTC day (days since the epoch) of a time: what `orders.rollover_day` counts in. */
export const dayOf = (ms: number) => Math.floor(ms / DAY_MS)

/**
 * The last day a position's swap is settled for: its rollover day, or the day it was opened (a row written
 * without one, as another writer may, owes nothing for the days before it existed).
 */
export const settledThrough = (o: { rolloverDay: number; openTime: number }) =>
  Math.max(o.rolloverDay, dayOf(o.openTime))

/** What the daily swap of a symbol depends on besides its rates (the symbol as a group sees it). */
export interface RolloverSpec extends SymbolSpec {
  /** 1: swap is charged; anything else: the symbol is swap-free (no day is owed, none is kept for later). */
  swapEnable: number
  /** The weekday (0 Sunday) whose rollover is charged three days (the weekend's). */
  swapRollover3days: number
  /** Sunday first: a day without a trading session owes no swap. */
  sessionList: readonly { trade: readonly unknown[] }[]
}

/**
 * The swap a position owes for the rollovers it was held through: every UTC midnight after the day
 * `fromDay` up to the start of `today`, each for the day that ended there (none for a day its symbol did
 * not trade, three on the triple-swap weekday), at `price` (what it would close at now), in the account
 * currency. 0 for a swap-free symbol. A day whose charge cannot be converted (no rate) is not charged, as
 * the daily job never charged it.
 */
export function swapDue(
  spec: RolloverSpec,
  position: { cmd: number; volume: number },
  fromDay: number,
  today: number,
  price: number,
  currency: string,
  quotes: QuoteLookup,
): number {
  if (spec.swapEnable !== 1) return 0
  let total = 0
  for (let d = fromDay + 1; d <= today; d++) {
    const weekday = new Date((d - 1) * DAY_MS).getUTCDay()
    if ((spec.sessionList[weekday]?.trade.length ?? 0) === 0) continue
    const days = weekday === spec.swapRollover3days ? 3 : 1
    const charge = swapCharge(spec, position.cmd, position.volume, price, days, currency, quotes)
    if (charge !== null) total += charge
  }
  return total
}
