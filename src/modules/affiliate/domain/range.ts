/**
 * The periods of the cabinet (`range=`), in UTC days, half-open [from, to):
 * - `today`, `7d`, `30d`, `90d`: the last N days including today;
 * - `mtd`, `ytd`: from the first day of this month / year to the end of today;
 * - `custom` with `from` and `to` (YYYY-MM-DD, both included, at most 366 days).
 * Anything else is refused (400 INVALID_DATA naming the field), `from` or `to` with another range too;
 * `from`/`to` without a range are a custom range.
 */
export const RANGES = ['today', '7d', '30d', '90d', 'mtd', 'ytd', 'custom'] as const
type RangeName = (typeof RANGES)[number]
export interface Period {
  range: RangeName
  from: number
  to: number
  days: number
}

const DAY = 86_400_000
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/

function dayStart(ms: number) {
  return Math.floor(ms / DAY) * DAY
}

/** A calendar date YYYY-MM-DD as its UTC midnight in ms; null for anything else, 2026-02-30 included. */
export function parseDate(text: string | undefined): number | null {
  const m = text ? DATE.exec(text) : null
  if (!m) return null
  const ms = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]))
  const back = new Date(ms)
  return back.getUTCFullYear() === Number(m[1]) &&
    back.getUTCMonth() === Number(m[2]) - 1 &&
    back.getUTCDate() === Number(m[3])
    ? ms
    : null
}

export function periodOf(q: { range?: string; from?: string; to?: string }, now: number): Period | string {
  // from/to without a range ask for those days: a custom range (with another range they are refused below)
  const range = (q.range ?? (q.from !== undefined || q.to !== undefined ? 'custom' : '30d')) as RangeName
  if (!RANGES.includes(range)) return `range: one of ${RANGES.join(', ')}`
  // days sent with another range would be ignored: the caller would read figures of days it did not ask for
  if (range !== 'custom') {
    if (q.from) return `from: only with range=custom (range is ${range})`
    if (q.to) return `to: only with range=custom (range is ${range})`
  }
  const end = dayStart(now) + DAY
  const d = new Date(now)
  let from: number
  let to = end
  switch (range) {
    case 'today':
      from = end - DAY
      break
    case '7d':
    case '30d':
    case '90d':
      from = end - Number.parseInt(range, 10) * DAY
      break
    case 'mtd':
      from = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1)
      break
    case 'ytd':
      from = Date.UTC(d.getUTCFullYear(), 0, 1)
      break
    case 'custom': {
      const f = parseDate(q.from)
      const t = parseDate(q.to)
      if (f === null) return 'from: a date YYYY-MM-DD is required with range=custom'
      if (t === null) return 'to: a date YYYY-MM-DD is required with range=custom'
      if (t < f) return 'to: on or after from'
      if ((t - f) / DAY + 1 > 366) return 'to: at most 366 days after from'
      from = f
      to = t + DAY
      break
    }
  }
  return { range, from, to, days: Math.round((to - from) / DAY) }
}

/** The UTC days of a period as YYYY-MM-DD, oldest first (the x axis of the charts). */
export function daysOf(p: Period): string[] {
  const out: string[] = []
  for (let t = p.from; t < p.to; t += DAY) out.push(new Date(t).toISOString().slice(0, 10))
  return out
}
