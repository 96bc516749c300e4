import { sql } from 'drizzle-orm'
import { type BusEntry, isBusId, type MessageBus, type Subscription, ZERO_ID } from '../../kernel/bus/bus'
import { type ChannelEntry, defineChannel, publishTo } from '../../kernel/bus/channel'
import type { KeyValueStore } from '../../kernel/cache'
import type { Clock } from '../../kernel/clock'
import type { Db } from '../../kernel/db/client'
import type { Logger } from '../../kernel/logger'
import { SingleFlight } from '../../kernel/single-flight'
import type { CandleStore } from './candle-store'
import type { Quote } from './domain/conversion'
import { filterTick, type HeldLevel, spreadWithin, type TickFilterSettings } from './domain/tick-filter'
import type { ReferenceData } from './reference'
import { lastQuotes } from './schema'

export interface Tick extends Quote {
  symbol: string
  /** Id of the bus entry that carried it: global, so an SSE client resumes on any instance. */
  id: string
}

/** `replay`: the engine catching up after a takeover (triggers only fire for orders set before the tick). */
export type TickListener = (ticks: Tick[], meta: { replay: boolean }) => Promise<void> | void

interface TicksEntry {
  ticks: { symbol: string; bid: number; ask: number; time: number }[]
}

const quoteKey = (symbol: string) => `quote:v1:${symbol}`
/**
 * Id of the bus entry the shared latest quotes are as of, written by the engine with them (in the same
 * setMany, after them): the engine writes them after its own bus read, so they may be behind the bus, and
 * an edge stream that starts from them follows the bus from this id, not from the bus's newest.
 */
const SHARED_AT_KEY = 'quote:v1:@at'
const REMOTE_FRESH_MS = 250
/** A saved quote's time further ahead of the clock than any tick is let (market/service.ts): a bad tick's. */
const SAVED_AHEAD_MS = 60_000
/**
 * A bus reader that has not completed a read for this long is cut off (a healthy idle reader completes
 * a blocking read every second): its prices may be stale (docs/adr/0014).
 */
const STALE_AFTER_MS = 3000
/**
 * The engine's word that it reads the bus and writes the shared quotes (market.quotes-heartbeat, every
 * second, a key that lives ENGINE_SILENT_MS): an instance that reads no bus (the edge) takes its prices
 * from those quotes, and a quiet market writes none, so without it a stopped engine left the edge filling
 * at frozen prices. The key's expiry, not a time in it, says it is silent: no two hosts' clocks compared.
 */
const HEARTBEAT_KEY = 'quote:v1:@engine'
const ENGINE_SILENT_MS = 5000
/** How long the edge's reading of the word counts: past it, no reading (staleness says nothing of it). */
const BEAT_READING_MS = 1000
/** Bus entries a resume reads at most; past them it starts from the latest quotes (`since`). */
const REPLAY_ENTRIES = 4096
/** How often the spike filter says, per symbol, that it holds ticks back. */
const SPIKE_LOG_MS = 60_000
/** Ticks on the bus: hot (tens of thousands a second), so typed by its publisher here, not checked. */
// prices: a batch Redis appended after its publisher was told it failed is dropped by every reader
export const TICKS = defineChannel<TicksEntry>('market.ticks', undefined, {
  weight: (e) => e.ticks.length,
  deadline: true,
})

/**
 * The latest quote per symbol. Ticks go through the bus (kernel/bus): every instance applies every tick
 * in bus order to its latest quotes (the newest by quote time wins) and hands them to its listeners (SSE);
 * the engine instance also aggregates candles, writes the shared latest quotes (for instances that read
 * no bus: the edge) and hands them to the engine's listeners (triggers, alerts). Without a bus reader
 * (the edge) the shared cache answers, re-read at most every 250 ms.
 */
export class QuoteHub {
  private readonly local = new Map<string, Quote>()
  /** When this instance last took a tick of the symbol off the bus (its clock): the feed's own time may lag or lead. */
  private readonly ticked = new Map<string, number>()
  /**
   * Quotes read from the shared cache (an instance that reads no bus: the edge), with when the engine
   * took each off the bus by its own clock (`seen`): its age is the engine's, not the feed clock's.
   */
  private readonly remote = new Map<string, { quote: Quote | null; at: number; seen?: number }>()
  private readonly listeners: TickListener[] = []
  private readonly engineListeners: TickListener[] = []
  /** Quote time of the last tick per symbol the engine processed (an older one is dropped). */
  private readonly engineLast = new Map<string, number>()
  private subscription: Subscription | null = null
  /** Id of the last tick entry this instance applied to `local` (null before its first): what its quotes are as of. */
  private applied: string | null = null
  /** Quotes saved by an earlier run (last_quotes): the answer of last resort until ticks arrive. */
  private readonly saved = new Map<string, Quote>()
  /** Symbols whose quote changed since the last save (the engine saves). */
  private readonly unsaved = new Set<string>()
  /** The spike filter's held-back level per symbol (the ticks this instance publishes). */
  private readonly held = new Map<string, HeldLevel>()
  /** Ticks the spike filter held back per symbol, and when it last said so. */
  private readonly spikes = new Map<string, { total: number; sinceLog: number; loggedAt: number }>()

  constructor(
    private readonly db: Db,
    private readonly store: KeyValueStore,
    private readonly bus: MessageBus,
    private readonly refdata: ReferenceData,
    private readonly candles: CandleStore,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly filter: TickFilterSettings = { spikePercent: 0, confirmTicks: 0, maxSpreadPercent: 0 },
    private readonly edge = false,
  ) {
    this.warming = new SingleFlight(!edge)
  }

  /** At the edge: whether the engine's word was there, and when this isolate had it read. */
  private engineBeat: { alive: boolean; readAt: number } | null = null
  /** When the engine's handler last replayed bus entries (a takeover's catch-up: no shared quotes written). */
  private replayedAt = Number.NEGATIVE_INFINITY

  /** The engine's job (every second): its word, while its bus reader is current and it writes the quotes. */
  async heartbeat() {
    if (this.staleness() !== null || this.clock.now() - this.replayedAt < 1000) return
    await this.store.set(HEARTBEAT_KEY, '1', ENGINE_SILENT_MS)
  }

  /**
   * At the edge, the engine's word as of the last 250 ms. Each caller reads it itself: a Worker may share
   * no promise between requests (kernel/single-flight.ts); `warmAll` reads it once for all its quotes.
   */
  private async readBeat(now: number): Promise<void> {
    if (this.engineBeat && now - this.engineBeat.readAt < REMOTE_FRESH_MS) return
    const raw = await this.store.get(HEARTBEAT_KEY)
    // as of when it came back: a slow read is no fresher than its answer
    this.engineBeat = { alive: raw !== null, readAt: this.clock.now() }
  }

  /** Subscribes to the ticks this instance applies (every instance); returns the unsubscribe function. */
  onTicks(listener: TickListener): () => void {
    return subscribe(this.listeners, listener)
  }

  /**
   * Ticks after the bus id `from`, for one listener, from a reader of its own that polls every `pollMs`:
   * at the edge, where no instance-wide reader feeds `onTicks` (a Worker keeps no connection between
   * requests), a quote stream follows the bus itself. Returns the function that stops it.
   */
  follow(from: string, listener: TickListener, pollMs: number): () => void {
    const sub = this.bus.subscribe(
      from,
      async (entries) => {
        const ticks = entries.flatMap((e) =>
          e.type === TICKS.name ? (e.data as TicksEntry).ticks.map((t) => ({ ...t, id: e.id })) : [],
        )
        if (ticks.length) await listener(ticks, { replay: false })
      },
      { pollMs },
    )
    return () => void sub.close()
  }

  /** Subscribes to the ticks the engine processes (only on the instance holding the engine role). */
  onEngineTicks(listener: TickListener): () => void {
    return subscribe(this.engineListeners, listener)
  }

  /**
   * When this instance last took a tick of `symbol` off the bus, by its own clock; for an instance that
   * reads no bus (the edge), when the engine did, as it wrote the shared quote (a feed whose clock lags or
   * leads ages the same on every runtime); null before the symbol's first tick (or a shared quote written
   * by an engine of a release that did not say).
   */
  tickedAt(symbol: string): number | null {
    return this.ticked.get(symbol) ?? this.remote.get(symbol)?.seen ?? null
  }

  /** When `quote` of `symbol` arrived, for its age (quoteAgeOver): tickedAt, else the feed's own time. */
  seenAt(symbol: string, quote: Quote): number {
    return this.tickedAt(symbol) ?? quote.time
  }

  /** Synchronous latest quote known to this instance (the hot path of margin and trigger checks). */
  peek(symbol: string): Quote | null {
    return this.local.get(symbol) ?? this.remote.get(symbol)?.quote ?? this.saved.get(symbol) ?? null
  }

  /**
   * Why this instance's prices may be stale, or null when they are current: its bus reader has not read
   * for STALE_AFTER_MS (Redis away), or, for an instance that reads no bus (the edge), the shared cache
   * that holds the latest quotes is unreachable, or the engine that writes them has not said it does for
   * ENGINE_SILENT_MS (as of the last quote read). A fill must not use such a price.
   */
  staleness(): string | null {
    if (this.subscription) {
      const age = Date.now() - this.subscription.lastReadAt
      if (age <= STALE_AFTER_MS) return null
      return `no price update for ${(age / 1000).toFixed(1)} s: the price bus is unreachable`
    }
    if (this.store.dependency && !this.store.dependency.up) return 'the quote cache is unreachable'
    // judged only on a reading of this request's time (the price it fills at was read with it)
    const beat = this.engineBeat
    if (this.edge && beat && !beat.alive && this.clock.now() - beat.readAt <= BEAT_READING_MS)
      return `the engine has written no shared quotes for over ${ENGINE_SILENT_MS / 1000} s`
    return null
  }

  /**
   * Latest quote, from this instance or the shared cache (at the edge with the engine's word beside it,
   * unless the caller has just read that: `beatRead`).
   */
  async get(symbol: string, beatRead = false): Promise<Quote | null> {
    const l = this.local.get(symbol)
    if (l) return l
    const r = this.remote.get(symbol)
    const now = this.clock.now()
    if (r && now - r.at < REMOTE_FRESH_MS) return r.quote
    const [raw] = await Promise.all([
      this.store.get(quoteKey(symbol)),
      this.edge && !beatRead ? this.readBeat(now) : null,
    ])
    const shared = raw ? (JSON.parse(raw) as Quote & { seen?: number }) : null
    const quote = shared && { bid: shared.bid, ask: shared.ask, time: shared.time }
    this.remote.set(symbol, { quote, at: now, seen: shared?.seen })
    return quote ?? this.saved.get(symbol) ?? null
  }

  /**
   * Loads the quotes a previous run saved, so positions are priced from the first request after a
   * restart, before any tick (with an in-memory cache the shared quotes are gone with the process).
   */
  async loadSaved() {
    // a saved time ahead of the clock came from a bad tick: its price is not what the symbol trades at
    const now = this.clock.now()
    for (const q of await this.db.select().from(lastQuotes))
      if (q.time <= now + SAVED_AHEAD_MS) this.saved.set(q.symbol, { bid: q.bid, ask: q.ask, time: q.time })
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
        where excluded.time >= last_quotes.time or last_quotes.time > ${this.clock.now() + SAVED_AHEAD_MS}`),
    )
  }

  private warmedAt = 0
  private readonly warming: SingleFlight

  /**
   * Loads every symbol's quote not received locally (cross rates for conversion) so `peek` answers
   * synchronously; at most once per 250 ms, and free when this instance receives all ticks itself.
   * Callers during a load wait for it (at the edge, run their own), so none of them peeks before the
   * shared cache has answered.
   */
  warmAll(): Promise<void> {
    if (!this.warming.busy && this.clock.now() - this.warmedAt < REMOTE_FRESH_MS) return Promise.resolve()
    return this.warming.run(async () => {
      const now = this.clock.now()
      await this.refdata.fresh()
      const missing = this.refdata.all().filter((s) => !this.local.has(s.symbol))
      if (missing.length)
        await Promise.all([
          this.edge ? this.readBeat(now) : null,
          ...missing.map((s) => this.get(s.symbol, this.edge)),
        ])
      this.warmedAt = now
    })
  }

  /**
   * Publishes a batch of ticks (validated by the caller: known symbols, 0 < bid <= ask), rounded to each
   * symbol's digits; ticks older than the symbol's latest quote are dropped, as are those the spike filter
   * holds back (domain/tick-filter: a jump from the last accepted price that the ticks after it have not
   * confirmed yet) and those of a spread past its bound. Returns the ticks published (on the embedded bus,
   * once applied and processed by the engine).
   */
  async apply(batch: { symbol: string; bid: number; ask: number; time: number }[]): Promise<Tick[]> {
    await this.refdata.fresh()
    const ticks: TicksEntry['ticks'] = []
    // the mid last accepted per symbol, this batch's ticks included
    const lastMid = new Map<string, number | null>()
    for (const t of batch) {
      const info = this.refdata.symbol(t.symbol)
      if (!info) continue
      const prev = this.local.get(t.symbol)
      if (prev && t.time < prev.time) continue
      const f = 10 ** info.digits
      const bid = Math.round(t.bid * f) / f
      const ask = Math.round(t.ask * f) / f
      // whatever the source: no price of 0 or below, no ask below the bid, no spread past its bound
      if (!(bid > 0 && ask >= bid) || !spreadWithin(this.filter.maxSpreadPercent, bid, ask)) continue
      const mid = (bid + ask) / 2
      let last = lastMid.get(t.symbol)
      if (last === undefined) {
        const q = this.filter.spikePercent > 0 ? await this.get(t.symbol) : null
        last = q ? (q.bid + q.ask) / 2 : null
      }
      const verdict = filterTick(this.filter, last, this.held.get(t.symbol), mid, t.time)
      if (verdict.held) this.held.set(t.symbol, verdict.held)
      else this.held.delete(t.symbol)
      if (!verdict.apply) {
        lastMid.set(t.symbol, last)
        this.heldBack(t.symbol, last, mid)
        continue
      }
      lastMid.set(t.symbol, mid)
      ticks.push({ symbol: t.symbol, bid, ask, time: t.time })
    }
    if (ticks.length === 0) return []
    const entry: TicksEntry = { ticks }
    const id = await publishTo(this.bus, TICKS, entry)
    return ticks.map((t) => ({ ...t, id }))
  }

  /** Counts a tick the spike filter held back; says so once a minute per symbol. */
  private heldBack(symbol: string, last: number | null, mid: number) {
    const now = this.clock.now()
    const c = this.spikes.get(symbol) ?? { total: 0, sinceLog: 0, loggedAt: Number.NEGATIVE_INFINITY }
    c.total++
    c.sinceLog++
    if (now - c.loggedAt >= SPIKE_LOG_MS) {
      this.logger.log('warn', 'quote spike held back', {
        symbol,
        last_mid: last,
        mid,
        held: c.sinceLog,
        filter_percent: this.filter.spikePercent,
      })
      c.loggedAt = now
      c.sinceLog = 0
    }
    this.spikes.set(symbol, c)
  }

  /** How many ticks of `symbol` the spike filter has held back on this instance. */
  spikesHeld(symbol: string): number {
    return this.spikes.get(symbol)?.total ?? 0
  }

  /** Reads the bus from now on (every instance with a long-lived process). */
  start() {
    this.subscription ??= this.bus.subscribe('$', async (entries) => {
      for (const e of entries) if (e.type === TICKS.name) await this.applyEntry(e)
    })
  }

  async stop() {
    await this.subscription?.close()
    this.subscription = null
  }

  /** Applies one entry to this instance's quotes and hands what it changed to the listeners. */
  private async applyEntry(e: BusEntry): Promise<void> {
    const accepted: Tick[] = []
    const now = this.clock.now()
    for (const t of (e.data as TicksEntry).ticks) {
      const prev = this.local.get(t.symbol)
      if (prev && t.time < prev.time) continue
      this.local.set(t.symbol, { bid: t.bid, ask: t.ask, time: t.time })
      this.ticked.set(t.symbol, now)
      accepted.push({ ...t, id: e.id })
    }
    this.applied = e.id
    if (accepted.length) await this.notify(this.listeners, accepted, { replay: false })
  }

  /**
   * The engine's handler of tick entries (its own reader, after this instance's: `local` is as new),
   * writes the shared latest quotes, aggregates candles and runs the engine listeners, in bus order.
   */
  async onEngineEntries(entries: ChannelEntry<TicksEntry>[], at: { replay: boolean }) {
    for (const e of entries) {
      const data = e.data as TicksEntry
      const ticks: Tick[] = []
      for (const t of data.ticks) {
        if (t.time < (this.engineLast.get(t.symbol) ?? 0)) continue
        this.engineLast.set(t.symbol, t.time)
        this.unsaved.add(t.symbol)
        ticks.push({ ...t, id: e.id })
      }
      if (at.replay) this.replayedAt = this.clock.now()
      if (ticks.length === 0) continue
      if (!at.replay) {
        // `seen`: when the engine took it, by its clock: the edge ages quotes by it (tickedAt)
        const seen = this.clock.now()
        // the entry's id last: a reader that has it has the quotes it stands for (a quote newer than the
        // id read is sent again by the stream that follows the bus from it, never lost)
        await this.store.setMany([
          ...ticks.map(
            (t) =>
              [quoteKey(t.symbol), JSON.stringify({ bid: t.bid, ask: t.ask, time: t.time, seen })] as const,
          ),
          [SHARED_AT_KEY, e.id] as const,
        ])
      }
      // a candle write that fails (the database away) costs that minute's bar, never the tick's triggers
      await this.candles.onTicks(ticks).catch((e: unknown) => {
        this.logger.log('error', 'candle write failed', { err: e instanceof Error ? e.message : String(e) })
      })
      await this.notify(this.engineListeners, ticks, { replay: at.replay })
    }
  }

  private async notify(list: TickListener[], ticks: Tick[], meta: { replay: boolean }) {
    for (const l of [...list]) {
      try {
        await l(ticks, meta)
      } catch (e) {
        this.logger.log('error', 'tick listener failed', { err: e instanceof Error ? e.message : String(e) })
      }
    }
  }

  /**
   * Ticks after the bus id `after` (SSE resume), or null when the bus no longer keeps what followed it or
   * more followed it than one read returns (REPLAY_ENTRIES): a replay cut there would leave out the ticks
   * after it, and the stream then follows live ticks only (a quiet symbol's client kept a stale price).
   */
  async since(after: string): Promise<Tick[] | null> {
    const entries = await this.bus.range(after, REPLAY_ENTRIES)
    if (!entries || entries.length >= REPLAY_ENTRIES) return null
    return entries.flatMap((e) =>
      e.type === TICKS.name ? (e.data as TicksEntry).ticks.map((t) => ({ ...t, id: e.id })) : [],
    )
  }

  /** Id of the newest bus entry. */
  newestId() {
    return this.bus.newest()
  }

  /**
   * Id of the last tick entry this instance applied (its bus reader may be behind the bus): the latest
   * quotes `get` answers from this instance are as of it. Before the first (a restarted instance), where
   * its bus reader stands: the ticks after it are still to be handed to the listeners (`'$'` not resolved
   * yet: the lowest id, whose only cost is ticks sent again under later ids). Null where no bus reader runs
   * (the edge).
   */
  appliedId(): string | null {
    if (!this.subscription) return null
    if (this.applied !== null) return this.applied
    const at = this.subscription.position
    return isBusId(at) ? at : ZERO_ID
  }

  /**
   * The shared latest quotes of `symbols` (a quote saved by an earlier run where none is shared) and the
   * id of the bus entry the engine wrote them as of (null when it did not say: nothing written yet, or an
   * engine of a release that did not), read together in one call: the edge's quotes and where they stand.
   */
  async sharedAsOf(symbols: readonly string[]): Promise<{ at: string | null; quotes: (Quote | null)[] }> {
    const raw = await this.store.getMany([...symbols.map(quoteKey), SHARED_AT_KEY])
    const now = this.clock.now()
    const quotes = symbols.map((symbol, i) => {
      const shared = raw[i] ? (JSON.parse(raw[i]) as Quote & { seen?: number }) : null
      const quote = shared && { bid: shared.bid, ask: shared.ask, time: shared.time }
      this.remote.set(symbol, { quote, at: now, seen: shared?.seen })
      return quote ?? this.saved.get(symbol) ?? null
    })
    const at = raw.at(-1) ?? null
    return { at: at !== null && isBusId(at) ? at : null, quotes }
  }
}

function subscribe(list: TickListener[], listener: TickListener) {
  list.push(listener)
  return () => {
    const i = list.indexOf(listener)
    if (i >= 0) list.splice(i, 1)
  }
}
