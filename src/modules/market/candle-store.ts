import { and, asc, desc, eq, gte, sql } from 'drizzle-orm'
import type { Db, Queryable } from '../../platform/db/client'
import { type Bar, BarBuilder, bucket, type Timeframe } from './domain/candles'
import { candles } from './schema'

/** `hourClosed`: the bar was the last of its hour (the tick that closed it is in a later hour). */
export type ClosedBarListener = (symbol: string, bar: Bar, hourClosed: boolean) => void

/**
 * Aggregates ticks into M1 bars and writes a bar when its minute closes, rolling it up into H1 and D1 in
 * the same statement batch (upserts, so a restarted or second aggregator merges instead of failing).
 */
export class CandleStore {
  private readonly builders = new Map<string, BarBuilder>()
  private readonly listeners: ClosedBarListener[] = []

  constructor(private readonly db: Db) {}

  onBarClosed(l: ClosedBarListener) {
    this.listeners.push(l)
  }

  async onTicks(ticks: { symbol: string; bid: number; time: number }[]) {
    const closed: { symbol: string; bar: Bar; hourClosed: boolean }[] = []
    for (const t of ticks) {
      let b = this.builders.get(t.symbol)
      if (!b) {
        b = new BarBuilder()
        this.builders.set(t.symbol, b)
      }
      const seconds = Math.floor(t.time / 1000)
      const bar = b.push(t.bid, seconds)
      if (bar)
        closed.push({ symbol: t.symbol, bar, hourClosed: bucket(seconds, 'H1') !== bucket(bar.time, 'H1') })
    }
    if (closed.length === 0) return
    await this.db.transaction(async (tx) => {
      for (const c of closed) await writeBar(tx, c.symbol, c.bar)
    })
    for (const c of closed) for (const l of this.listeners) l(c.symbol, c.bar, c.hourClosed)
  }

  /** Flushes the bars still open (shutdown, tests). */
  async flush() {
    const open = [...this.builders.entries()].flatMap(([symbol, b]) =>
      b.open ? [{ symbol, bar: b.open }] : [],
    )
    this.builders.clear()
    if (open.length === 0) return
    await this.db.transaction(async (tx) => {
      for (const c of open) await writeBar(tx, c.symbol, c.bar)
    })
  }

  /** Bars of a timeframe since `fromSeconds`, ascending. */
  range(symbol: string, tf: Timeframe, fromSeconds: number) {
    return this.db
      .select()
      .from(candles)
      .where(and(eq(candles.symbol, symbol), eq(candles.timeframe, tf), gte(candles.time, fromSeconds)))
      .orderBy(asc(candles.time))
  }

  /** The last `n` bars, ascending. */
  async last(symbol: string, tf: Timeframe, n: number) {
    const rows = await this.db
      .select()
      .from(candles)
      .where(and(eq(candles.symbol, symbol), eq(candles.timeframe, tf)))
      .orderBy(desc(candles.time))
      .limit(n)
    return rows.reverse()
  }
}

async function writeBar(tx: Queryable, symbol: string, bar: Bar) {
  for (const tf of ['M1', 'H1', 'D1'] as const)
    await tx
      .insert(candles)
      .values({ symbol, timeframe: tf, ...bar, time: bucket(bar.time, tf) })
      .onConflictDoUpdate({
        target: [candles.symbol, candles.timeframe, candles.time],
        set: {
          high: sql`max(${candles.high}, excluded.high)`,
          low: sql`min(${candles.low}, excluded.low)`,
          close: sql`excluded.close`,
          volume: sql`${candles.volume} + excluded.volume`,
        },
      })
}

/** Inserts many bars of one timeframe (backfill), in chunks. */
export async function insertBars(tx: Queryable, rows: (typeof candles.$inferInsert)[]) {
  for (let i = 0; i < rows.length; i += 500)
    await tx
      .insert(candles)
      .values(rows.slice(i, i + 500))
      .onConflictDoNothing()
}
