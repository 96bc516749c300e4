/**
 * Counting a phase's trading days pass after pass (spec 4.13: min_trading_days), without reading every
 * position the phase ever had. A pass that follows one which counted the phase reads only the positions
 * still open and those closed in the last 26 hours (a local day is at most 25 hours long), and adds the
 * days it sees after the last day counted. A day that became a trading day behind the last one counted (a
 * position committed an instant after a pass had counted the next day) is not seen that way: each phase
 * is counted anew from all its positions once a day, at a minute of its own, so those reads are spread
 * over the day's passes instead of all falling on the first pass after midnight.
 */

/**
 * How far back the recent positions reach: a pass reads the positions still open and those closed since
 * then. A local day is at most 25 hours long, and `recountDue` counts anew every phase counted 24 hours
 * ago or more, so the positions of every day not counted yet are in it.
 */
export const RECENT_WINDOW_MS = 26 * 3_600_000

const MINUTE = 60_000
const MINUTES_A_DAY = 1_440

/**
 * Whether a phase must be counted from all its positions in a pass at `now`: never counted by this
 * process (`countedAt` undefined), counted at a time after `now` (the clock stepped back), or its minute
 * of the day (its id modulo the minutes of a day, UTC) passed since it was counted. A day of minutes
 * holds every phase's minute: a count older than that is always done anew.
 */
export function recountDue(id: number, countedAt: number | undefined, now: number): boolean {
  if (countedAt === undefined || countedAt > now) return true
  const from = Math.floor(countedAt / MINUTE)
  const to = Math.floor(now / MINUTE)
  if (to - from >= MINUTES_A_DAY) return true
  // minutes from the one after `from` to the phase's next minute of the day
  const wait = (((id - from - 1) % MINUTES_A_DAY) + MINUTES_A_DAY) % MINUTES_A_DAY
  return wait < to - from
}

/**
 * The count after a pass. `days` are the local days (YYYY-MM-DD) the pass saw traded: from every position
 * on a recount, which counts them all; otherwise from the recent positions, of which the days after the
 * last one counted are added.
 */
export function countTradingDays(
  counted: { tradingDays: number; lastTradingDay: string },
  days: Iterable<string>,
  recount: boolean,
): { tradingDays: number; lastTradingDay: string } {
  let tradingDays = recount ? 0 : counted.tradingDays
  let lastTradingDay = recount ? '' : counted.lastTradingDay
  const after = lastTradingDay
  for (const d of days) {
    if (!recount && d <= after) continue
    tradingDays++
    if (d > lastTradingDay) lastTradingDay = d
  }
  return { tradingDays, lastTradingDay }
}
