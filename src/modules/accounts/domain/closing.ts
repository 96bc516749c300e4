const DAY_MS = 86_400_000

/**
 * The closes an account's prevbalance and prevmonthbalance are taken at (MT's: the balance at the end of
 * the previous trading day and of the previous month), for the moment `now` (epoch ms). The trading day
 * ends at 00:00 UTC for every brand, where trading's rollover charges the day's swap; the month at 00:00
 * UTC of its first day. Pure: the time is an argument.
 */
export function closingTimes(now: number) {
  const day = Math.floor(now / DAY_MS)
  const d = new Date(now)
  return {
    /** the current trading day (days since the epoch), whose start closed the previous one */
    day,
    dayStart: day * DAY_MS,
    /** the current month (`2026-11`), whose start closed the previous one */
    month: `${d.getUTCFullYear()}-${String(d.getUTCMonth() + 1).padStart(2, '0')}`,
    monthStart: Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1),
  }
}
