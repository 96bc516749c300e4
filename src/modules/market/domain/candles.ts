export type Timeframe = 'M1' | 'H1' | 'D1'
const TIMEFRAME_SECONDS: Record<Timeframe, number> = { M1: 60, H1: 3600, D1: 86400 }

export interface Bar {
  time: number
  open: number
  high: number
  low: number
  close: number
  volume: number
}

/** Bar open time (epoch seconds) of the bar containing `seconds`. */
export const bucket = (seconds: number, tf: Timeframe) => seconds - (seconds % TIMEFRAME_SECONDS[tf])

/**
 * Builds M1 bars from ticks (pure): `push` returns the bar that closed when a tick falls into a new
 * minute. Ticks older than the current bar are ignored (a feed may resend).
 */
export class BarBuilder {
  private current: Bar | null = null

  push(price: number, seconds: number): Bar | null {
    const t = bucket(seconds, 'M1')
    const c = this.current
    if (c && t < c.time) return null
    if (c && t === c.time) {
      c.high = Math.max(c.high, price)
      c.low = Math.min(c.low, price)
      c.close = price
      c.volume++
      return null
    }
    this.current = { time: t, open: price, high: price, low: price, close: price, volume: 1 }
    return c
  }

  get open(): Bar | null {
    return this.current
  }
}

/** Rolls bars up into a coarser timeframe (bars in ascending time). */
export function rollUp(bars: Bar[], tf: Timeframe): Bar[] {
  const out: Bar[] = []
  for (const b of bars) {
    const t = bucket(b.time, tf)
    const last = out[out.length - 1]
    if (last && last.time === t) {
      last.high = Math.max(last.high, b.high)
      last.low = Math.min(last.low, b.low)
      last.close = b.close
      last.volume += b.volume
    } else out.push({ ...b, time: t })
  }
  return out
}
