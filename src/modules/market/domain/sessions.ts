/** One trading interval of a day, server time (UTC). close_hour 24 means midnight at the end of the day. */
interface SessionInterval {
  open_hour: number
  open_min: number
  close_hour: number
  close_min: number
}

export interface DaySessions {
  trade_overnight: number
  trade: SessionInterval[]
}

/** Whether trading is open at `ms` (epoch milliseconds, UTC) by the symbol's 7 days (Sunday first). */
export function isTradingOpen(sessions: DaySessions[], ms: number): boolean {
  const d = new Date(ms)
  const day = sessions[d.getUTCDay()]
  if (!day) return false
  const minute = d.getUTCHours() * 60 + d.getUTCMinutes()
  return day.trade.some(
    (s) => minute >= s.open_hour * 60 + s.open_min && minute < s.close_hour * 60 + s.close_min,
  )
}

/** Builds 7 days from one set of weekday intervals, with optional weekend intervals. */
export function weekSessions(
  weekday: [number, number, number, number][],
  opts: {
    sunday?: [number, number, number, number][]
    friday?: [number, number, number, number][]
    saturday?: [number, number, number, number][]
  } = {},
): DaySessions[] {
  const iv = (list: [number, number, number, number][]) =>
    list.map(([open_hour, open_min, close_hour, close_min]) => ({
      open_hour,
      open_min,
      close_hour,
      close_min,
    }))
  return [0, 1, 2, 3, 4, 5, 6].map((d) => {
    const list =
      d === 0
        ? (opts.sunday ?? [])
        : d === 6
          ? (opts.saturday ?? [])
          : d === 5
            ? (opts.friday ?? weekday)
            : weekday
    return { trade_overnight: list.length > 0 ? 1 : 0, trade: iv(list) }
  })
}
