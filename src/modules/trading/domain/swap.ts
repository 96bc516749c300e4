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

/** One trading interval of a day (market's sessions); a field it lacks counts as 0. */
interface Interval {
  open_hour?: number
  open_min?: number
  close_hour?: number
  close_min?: number
}

/** What the daily swap of a symbol depends on besides its rates (the symbol as a group sees it). */
export interface RolloverSpec extends SymbolSpec {
  /** 1: swap is charged; anything else: the symbol is swap-free (no day is owed, none is kept for later). */
  swapEnable: number
  /**
   * The weekday (0 Sunday) whose rollover also carries the week's nights without one (the weekend's):
   * charged 1 + that many nights. Outside 0..6: no such day, those nights are not charged.
   */
  swapRollover3days: number
  /** Sunday first: which days the symbol trades, and when (what makes a night a rollover). */
  sessionList: readonly { trade: readonly Interval[] }[]
}

const minuteOf = (h: number | undefined, m: number | undefined) => (h ?? 0) * 60 + (m ?? 0)

/**
 * Whether the midnight after each weekday (0 Sunday) is a rollover of the symbol: the day traded, and its
 * trading is not only the evening that opens the week (a day after one without trading, whose sessions
 * open after 00:00 and run to its midnight into a traded day: forex's Sunday 22:00, whose trading is
 * Monday's, rolled at Monday's midnight). Forex and metals (Sunday evening to Friday): Monday to Friday;
 * stocks (weekdays): Monday to Friday; a symbol trading every day (crypto, DEMO_WEEKEND_TRADING): every
 * night.
 */
export function rolloverNights(sessions: RolloverSpec['sessionList']): boolean[] {
  const trades = (w: number) => (sessions[(w + 7) % 7]?.trade.length ?? 0) > 0
  return [0, 1, 2, 3, 4, 5, 6].map((w) => {
    if (!trades(w)) return false
    if (trades(w - 1) || !trades(w + 1)) return true
    const day = sessions[w]!.trade
    const opens = Math.min(...day.map((i) => minuteOf(i.open_hour, i.open_min)))
    const closes = Math.max(...day.map((i) => minuteOf(i.close_hour, i.close_min)))
    return !(opens > 0 && closes >= 24 * 60)
  })
}

const multipliersBySessions = new WeakMap<object, Map<number, readonly number[]>>()

/**
 * The days of swap charged at the midnight after each weekday (0 Sunday). Every night a position is held
 * is owed once: a rollover night charges one; a night without one (the weekend's) is charged in advance
 * with the rollover of the `swapRollover3days` weekday, which charges 1 + their number (forex: Wednesday
 * 3, Saturday and Sunday nights 0; a symbol trading every day: 1 each night, Wednesday too). So, with a
 * triple weekday set, any 7 consecutive nights charge exactly 7 days, whatever the sessions, and a symbol
 * rolling every night charges exactly one day a night. A symbol with no trading day at all owes nothing.
 */
export function nightMultipliers(
  spec: Pick<RolloverSpec, 'sessionList' | 'swapRollover3days'>,
): readonly number[] {
  const byTriple = multipliersBySessions.get(spec.sessionList) ?? new Map<number, readonly number[]>()
  multipliersBySessions.set(spec.sessionList, byTriple)
  const known = byTriple.get(spec.swapRollover3days)
  if (known) return known
  const rolls = rolloverNights(spec.sessionList)
  const triple = spec.swapRollover3days
  const m: number[] = rolls.map((r) => (r ? 1 : 0))
  if (rolls.some(Boolean) && Number.isInteger(triple) && triple >= 0 && triple <= 6)
    m[triple] = 1 + rolls.filter((r, w) => !r && w !== triple).length
  byTriple.set(triple, m)
  return m
}

/**
 * The swap a position owes for the rollovers it was held through: every UTC midnight after the day
 * `fromDay` up to the start of `today`, each for the day that ended there, that many days as
 * `nightMultipliers` gives (none for a night without a rollover, the week's others on the triple-swap
 * weekday), at `price` (what it would close at now), in the account currency. 0 for a swap-free symbol.
 * A day whose charge cannot be converted (no rate) is not charged, as the daily job never charged it.
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
  const nights = nightMultipliers(spec)
  let total = 0
  for (let d = fromDay + 1; d <= today; d++) {
    const days = nights[new Date((d - 1) * DAY_MS).getUTCDay()] ?? 0
    if (days === 0) continue
    const charge = swapCharge(spec, position.cmd, position.volume, price, days, currency, quotes)
    if (charge !== null) total += charge
  }
  return total
}
