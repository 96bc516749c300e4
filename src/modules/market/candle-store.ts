import { and, asc, desc, eq, gte, sql } from 'drizzle-orm'
import type { Db, Queryable } from '../../kernel/db/client'
import { type Bar, BarBuilder, bucket, type Timeframe } from './domain/candles'
import { candles } from './schema'

/** `hourClosed`: the bar was the last of its hour (the tick that closed it is in a later hour). */
type ClosedBarListener = (symbol: string, bar: Bar, hourClosed: boolean) => void

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
    await this.db.transaction((tx) => writeBars(tx, closed))
    for (const c of closed) for (const l of this.listeners) l(c.symbol, c.bar, c.hourClosed)
  }

  /** Flushes the bars still open (shutdown, tests). */
  async flush() {
    const open = [...this.builders.entries()].flatMap(([symbol, b]) =>
      b.open ? [{ symbol, bar: b.open }] : [],
    )
    this.builders.clear()
    if (open.length === 0) return
    await this.db.transaction((tx) => writeBars(tx, open))
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

/**
 * Rolls closed M1 bars into M1, H1 and D1 with one upsert statement (the rows travel as one JSON
 * parameter): a minute boundary closes a bar for every quoted symbol at once, and a statement per bar
 * and timeframe would hold the write lock for tens of milliseconds.
 */
async function writeBars(tx: Queryable, bars: { symbol: string; bar: Bar }[]) {
  const rows = bars.flatMap(({ symbol, bar }) =>
    (['M1', 'H1', 'D1'] as const).map((tf) => [
      symbol,
      tf,
      bucket(bar.time, tf),
      bar.open,
      bar.high,
      bar.low,
      bar.close,
      bar.volume,
    ]),
  )
  await tx.run(sql`
    insert into candles (symbol, timeframe, time, open, high, low, close, volume)
    select value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, value ->> 5, value ->> 6, value ->> 7
    from json_each(${JSON.stringify(rows)}) where true order by key
    on conflict (symbol, timeframe, time) do update set
      high = max(high, excluded.high),
      low = min(low, excluded.low),
      close = excluded.close,
      volume = volume + excluded.volume`)
}

/** Inserts many bars of one timeframe (backfill), in chunks. */
export async function insertBars(tx: Queryable, rows: (typeof candles.$inferInsert)[]) {
  for (let i = 0; i < rows.length; i += 500)
    await tx
      .insert(candles)
      .values(rows.slice(i, i + 500))
      .onConflictDoNothing()
}
