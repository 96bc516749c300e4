import type { Bar } from './candles'

const pct = (from: number, to: number) => (from > 0 ? Math.round(((to - from) / from) * 10000) / 100 : 0)

/** Last close at or before `seconds` (bars ascending), or null. */
function closeAt(bars: Bar[], seconds: number): number | null {
  let lo = 0
  let hi = bars.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (bars[mid].time <= seconds) lo = mid + 1
    else hi = mid
  }
  return lo === 0 ? null : bars[lo - 1].close
}

const DAY = 86400

/**
 * Performance from D1 bars (percent, 2 decimals): the last close against the close 1W/1M/3M/6M/1Y
 * earlier and against the last close of the previous year (YTD). 0 when history is too short.
 */
export function performance(
  d1: Bar[],
  nowSeconds: number,
): Record<'1W' | '1M' | '3M' | '6M' | 'YTD' | '1Y', number> {
  const last = d1.length ? d1[d1.length - 1].close : 0
  const back = (seconds: number) => {
    const c = closeAt(d1, nowSeconds - seconds)
    return c === null ? 0 : pct(c, last)
  }
  const yearStart = Date.UTC(new Date(nowSeconds * 1000).getUTCFullYear(), 0, 1) / 1000
  const ytdBase = closeAt(d1, yearStart - 1)
  return {
    '1W': back(7 * DAY),
    '1M': back(30 * DAY),
    '3M': back(91 * DAY),
    '6M': back(182 * DAY),
    YTD: ytdBase === null ? 0 : pct(ytdBase, last),
    '1Y': back(365 * DAY),
  }
}

/**
 * Seasonality: per year with data (ascending), the 12 monthly returns in percent: last close of the month
 * against the last close of the previous month (or the month's first open). null for months without bars.
 */
export function seasons(d1: Bar[]): { years: number[]; rows: (number | null)[][] } {
  const months = new Map<string, { open: number; close: number }>()
  for (const b of d1) {
    const d = new Date(b.time * 1000)
    const key = `${d.getUTCFullYear()}-${d.getUTCMonth()}`
    const m = months.get(key)
    if (m) m.close = b.close
    else months.set(key, { open: b.open, close: b.close })
  }
  const years = [...new Set(d1.map((b) => new Date(b.time * 1000).getUTCFullYear()))].sort()
  const rows = years.map((y) =>
    Array.from({ length: 12 }, (_, m) => {
      const cur = months.get(`${y}-${m}`)
      if (!cur) return null
      const prev = months.get(m === 0 ? `${y - 1}-11` : `${y}-${m - 1}`)
      return pct(prev ? prev.close : cur.open, cur.close)
    }),
  )
  return { years, rows }
}

/** price1d: percent change of the last hourly close against the close 24 hours earlier. */
export function price1d(h1: Bar[]): number {
  if (h1.length === 0) return 0
  const last = h1[h1.length - 1]
  const base = closeAt(h1, last.time - DAY)
  return base === null ? pct(h1[0].open, last.close) : pct(base, last.close)
}
