import { sql } from 'drizzle-orm'
import type { KeyValueStore } from '../../kernel/cache'
import type { Clock } from '../../kernel/clock'
import type { Db } from '../../kernel/db/client'
import type { Logger } from '../../kernel/logger'
import type { CandleStore } from './candle-store'
import type { Quote } from './domain/conversion'
import type { ReferenceData } from './reference'
import { lastQuotes } from './schema'

export interface Tick extends Quote {
  symbol: string
  /** Sequence number of this instance's stream (SSE event id). */
  seq: number
}

/** `explicit`: a feed batch posted to the ingest routes (every account is then checked for stop-out). */
export type TickListener = (ticks: Tick[], meta: { explicit: boolean }) => Promise<void> | void

const quoteKey = (symbol: string) => `quote:v1:${symbol}`
const REMOTE_FRESH_MS = 250
const RING = 4096

/**
 * The latest quote per symbol. A tick applied here is kept in memory, written to the shared cache so
 * every instance sees it, aggregated into candles and handed to listeners (trigger engine, alerts, SSE).
 * Instances that did not receive a tick read the cache (re-read at most every 250 ms).
 */
export class QuoteHub {
  private readonly local = new Map<string, Quote>()
  private readonly remote = new Map<string, { quote: Quote | null; at: number }>()
  private readonly listeners: TickListener[] = []
  private readonly ring: Tick[] = []
  private seq = 0
  /** Quotes saved by an earlier run (last_quotes): the answer of last resort until ticks arrive. */
  private readonly saved = new Map<string, Quote>()
  /** Symbols whose local quote changed since the last save. */
  private readonly unsaved = new Set<string>()

  constructor(
    private readonly db: Db,
    private readonly store: KeyValueStore,
    private readonly refdata: ReferenceData,
    private readonly candles: CandleStore,
    private readonly clock: Clock,
    private readonly logger: Logger,
  ) {}

  /** Subscribes to applied ticks; returns the unsubscribe function. */
  onTicks(listener: TickListener): () => void {
    this.listeners.push(listener)
    return () => {
      const i = this.listeners.indexOf(listener)
      if (i >= 0) this.listeners.splice(i, 1)
    }
  }

  /** Synchronous latest quote known to this instance (the hot path of margin and trigger checks). */
  peek(symbol: string): Quote | null {
    return this.local.get(symbol) ?? this.remote.get(symbol)?.quote ?? this.saved.get(symbol) ?? null
  }

  /** Latest quote, from this instance or the shared cache. */
  async get(symbol: string): Promise<Quote | null> {
    const l = this.local.get(symbol)
    if (l) return l
    const r = this.remote.get(symbol)
    const now = this.clock.now()
    if (r && now - r.at < REMOTE_FRESH_MS) return r.quote
    const raw = await this.store.get(quoteKey(symbol))
    const quote = raw ? (JSON.parse(raw) as Quote) : null
    this.remote.set(symbol, { quote, at: now })
    return quote ?? this.saved.get(symbol) ?? null
  }

  /**
   * Loads the quotes a previous run saved, so positions are priced from the first request after a
   * restart, before any tick (with an in-memory cache the shared quotes are gone with the process).
   */
  async loadSaved() {
    for (const q of await this.db.select().from(lastQuotes))
      this.saved.set(q.symbol, { bid: q.bid, ask: q.ask, time: q.time })
  }

  /** Saves the local quotes that changed since the last call (a job every few seconds, and at shutdown). */
  async saveLatest() {
    if (this.unsaved.size === 0) return
    const rows = [...this.unsaved].flatMap((s) => {
      const q = this.local.get(s)
      return q ? [[s, q.bid, q.ask, q.time]] : []
    })
    this.unsaved.clear()
    await this.db.transaction((tx) =>
      tx.run(sql`
        insert into ${lastQuotes} (symbol, bid, ask, time)
        select value ->> 0, value ->> 1, value ->> 2, value ->> 3 from json_each(${JSON.stringify(rows)}) where true
        on conflict (symbol) do update set bid = excluded.bid, ask = excluded.ask, time = excluded.time
        where excluded.time >= last_quotes.time`),
    )
  }

  private warmedAt = 0
  private warming: Promise<void> | null = null

  /**
   * Loads every symbol's quote not received locally (cross rates for conversion) so `peek` answers
   * synchronously; at most once per 250 ms, and free when this instance receives all ticks itself.
   * Callers during a load wait for it, so none of them peeks before the shared cache has answered.
   */
  warmAll(): Promise<void> {
    if (this.warming) return this.warming
    const now = this.clock.now()
    if (now - this.warmedAt < REMOTE_FRESH_MS) return Promise.resolve()
    this.warmedAt = now
    this.warming = (async () => {
      await this.refdata.fresh()
      const missing = this.refdata.all().filter((s) => !this.local.has(s.symbol))
      if (missing.length) await Promise.all(missing.map((s) => this.get(s.symbol)))
    })().finally(() => {
      this.warming = null
    })
    return this.warming
  }

  /**
   * Applies a batch of ticks (validated by the caller: known symbols, 0 < bid <= ask). Ticks older than
   * the symbol's latest are dropped. Returns the ticks accepted.
   */
  async apply(
    batch: { symbol: string; bid: number; ask: number; time: number }[],
    meta: { explicit: boolean } = { explicit: false },
  ): Promise<Tick[]> {
    await this.refdata.fresh()
    const accepted: Tick[] = []
    for (const t of batch) {
      const info = this.refdata.symbol(t.symbol)
      if (!info) continue
      const prev = this.local.get(t.symbol)
      if (prev && t.time < prev.time) continue
      const f = 10 ** info.digits
      const tick: Tick = {
        symbol: t.symbol,
        bid: Math.round(t.bid * f) / f,
        ask: Math.round(t.ask * f) / f,
        time: t.time,
        seq: ++this.seq,
      }
      this.local.set(t.symbol, { bid: tick.bid, ask: tick.ask, time: tick.time })
      this.unsaved.add(t.symbol)
      accepted.push(tick)
      this.ring.push(tick)
      if (this.ring.length > RING) this.ring.splice(0, this.ring.length - RING)
    }
    if (accepted.length === 0) return accepted
    await Promise.all(
      accepted.map((t) =>
        this.store.set(quoteKey(t.symbol), JSON.stringify({ bid: t.bid, ask: t.ask, time: t.time })),
      ),
    )
    await this.candles.onTicks(accepted)
    for (const l of [...this.listeners]) {
      try {
        await l(accepted, meta)
      } catch (e) {
        this.logger.log('error', 'tick listener failed', { err: e instanceof Error ? e.message : String(e) })
      }
    }
    return accepted
  }

  /** Ticks after `seq` still in the replay buffer (SSE resume), or null when `seq` is too old. */
  since(seq: number): Tick[] | null {
    if (this.ring.length === 0) return seq <= this.seq ? [] : null
    if (seq < this.ring[0].seq - 1) return null
    return this.ring.filter((t) => t.seq > seq)
  }

  get lastSeq() {
    return this.seq
  }
}
