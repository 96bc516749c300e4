import { and, eq } from 'drizzle-orm'
import type { Db } from '../../kernel/db/client'
import { insertBars } from './candle-store'
import { type Bar, rollUp, type Timeframe } from './domain/candles'
import { gbmStep, normal, rng, symbolSeed } from './domain/simulator'
import { candles, type symbols } from './schema'

const HOUR = 3600
const DAY = 86400

/** Candle history of one symbol from the simulator: D1 for `days`, H1 for the last 30 days, M1 for 48 hours. */
function simulateHistory(
  s: Pick<typeof symbols.$inferSelect, 'symbol' | 'digits' | 'simPrice' | 'simVolatility'>,
  nowSeconds: number,
  seed: number,
  days = 400,
): Record<Timeframe, Bar[]> {
  const z = normal(rng(symbolSeed(seed, s.symbol)))
  const f = 10 ** s.digits
  const r = (x: number) => Math.round(x * f) / f
  const endHour = nowSeconds - (nowSeconds % HOUR)
  const startHour = endHour - days * DAY
  const m1From = endHour - 48 * HOUR
  let price = s.simPrice
  const hours: Bar[] = []
  const minutes: Bar[] = []
  for (let h = startHour; h < endHour; h += HOUR) {
    const detailed = h >= m1From
    const steps = detailed ? 60 : 6
    const open = price
    let high = price
    let low = price
    for (let i = 0; i < steps; i++) {
      const before = price
      price = gbmStep(price, s.simVolatility, HOUR / steps, z())
      high = Math.max(high, price)
      low = Math.min(low, price)
      if (detailed)
        minutes.push({
          time: h + i * 60,
          open: r(before),
          high: r(Math.max(before, price)),
          low: r(Math.min(before, price)),
          close: r(price),
          volume: 1 + Math.floor(z() ** 2 * 20),
        })
    }
    hours.push({ time: h, open: r(open), high: r(high), low: r(low), close: r(price), volume: steps * 10 })
  }
  return {
    D1: rollUp(hours, 'D1'),
    H1: hours.filter((b) => b.time >= endHour - 30 * DAY),
    M1: minutes,
  }
}

/**
 * Writes simulated history for every symbol that has none (demo seeding), so charts and metrics have data
 * at once: one transaction per symbol, so no long write transaction holds the database (sqld ends one that
 * runs for seconds while another writer waits) and a second instance booting meanwhile merges its rows.
 */
export async function backfillCandles(
  db: Db,
  list: Pick<typeof symbols.$inferSelect, 'symbol' | 'digits' | 'simPrice' | 'simVolatility'>[],
  nowMs: number,
  seed: number,
) {
  const now = Math.floor(nowMs / 1000)
  for (const s of list) {
    const [has] = await db
      .select({ t: candles.time })
      .from(candles)
      .where(and(eq(candles.symbol, s.symbol), eq(candles.timeframe, 'D1')))
      .limit(1)
    if (has) continue
    const h = simulateHistory(s, now, seed)
    await db.transaction(async (tx) => {
      for (const tf of ['D1', 'H1', 'M1'] as const)
        await insertBars(
          tx,
          h[tf].map((b) => ({ symbol: s.symbol, timeframe: tf, ...b })),
        )
    })
  }
}
