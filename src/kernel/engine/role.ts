import type { BusEntry, MessageBus, Subscription } from '../bus/bus'
import { busNow, compareIds, idTime } from '../bus/bus'
import type { Channel, ChannelEntry } from '../bus/channel'
import type { KeyValueStore } from '../cache'
import type { Config } from '../config'
import type { Leases } from '../jobs/leases'
import type { Logger } from '../logger'
import { errText } from '../resilience'
import type { EnginePart } from './part'

/** Handles a run of bus entries of one channel; `replay` while catching up after a takeover. */
type EngineHandler = (entries: BusEntry[], at: { replay: boolean }) => Promise<void>

const LEASE = 'engine'
const CURSOR_KEY = 'engine:cursor:v1'
/** The cursor's read failed (not: there is no cursor). */
const UNREADABLE = Symbol('unreadable')
/** A dead engine's lease lapses within this; the standby asks again the moment it does. */
const ENGINE_LEASE_MS = 3000
const RENEW_MS = 1000
/** A holder cut off from the lease store gives the role up this long before its lease can lapse. */
const LEASE_MARGIN_MS = 750
/**
 * A cursor older than this is not replayed (the books were loaded from the database since). A settler
 * holding the cursor (CursorHeld) lets its hold go before its read is this old (trigger-engine.ts).
 */
export const REPLAY_MAX_MS = 60_000

/**
 * A settler's word that its read is not settled yet (an execution the database did not take, to be
 * written again): the cursor does not move past the read, so an engine taking the role replays it.
 */
export class CursorHeld extends Error {
  override name = 'CursorHeld'
  /** The bus id of the oldest entry not settled (the cursor is kept just before it); else the read's first. */
  constructor(
    message: string,
    readonly from?: string,
  ) {
    super(message)
  }
}

/**
 * The engine role: one instance at a time (a lease) owns the in-memory books (resting triggers, alerts),
 * stop-outs, expiry, rollover and the quote simulator; the others serve the API and stand by. The engine
 * reads the bus from where the previous engine stopped (a cursor in the shared cache), so no entry is
 * missed across a takeover; every execution is a conditional update, so none is applied twice.
 */
export class EngineRole {
  private leader = false
  private readonly loaders: (() => Promise<void>)[] = []
  private readonly unloaders: (() => void)[] = []
  private readonly handlers = new Map<string, EngineHandler[]>()
  private readonly settlers: (() => Promise<void>)[] = []
  private sub: Subscription | null = null
  private timer: ReturnType<typeof setTimeout> | null = null
  private stopped = false
  private catchUpTo: string | null = null
  private savedAt = 0
  /**
   * The bus position every entry before which is settled: the last settled read's, or just before the
   * oldest entry a settler holds. A graceful stop saves it, never the subscription's (past a held read).
   */
  private settledTo: string | null = null
  /** The cursor was saved before a held entry: the next settled read saves at once. */
  private holding = false
  /** Until when the lease this instance last renewed is surely its own. */
  private heldUntil = 0

  constructor(
    private readonly setting: Config['role'],
    private readonly bus: MessageBus,
    private readonly leases: Leases,
    private readonly store: KeyValueStore,
    private readonly owner: string,
    private readonly logger: Logger,
  ) {}

  get isLeader() {
    return this.leader
  }

  /** The instance holding the engine role now (its process origin), or null. */
  holder(): Promise<string | null> {
    return this.leases.holder(LEASE)
  }

  /** Loads a module's books from the database when this instance becomes the engine. */
  onLoad(load: () => Promise<void>, unload: () => void = () => {}) {
    this.loaders.push(load)
    this.unloaders.push(unload)
  }

  /**
   * Handles entries of a channel while this instance is the engine, in bus order. A channel with a schema
   * has each entry checked first: one that does not match is logged and left out (a publisher's bug
   * must not stop the engine).
   */
  on<T>(channel: Channel<T>, handle: (entries: ChannelEntry<T>[], at: { replay: boolean }) => Promise<void>) {
    const schema = channel.schema
    const handler: EngineHandler = schema
      ? (entries, at) => {
          const valid = entries.filter((e) => {
            const ok = schema.safeParse(e.data).success
            if (!ok)
              this.logger.log('error', 'bus entry does not match its channel', {
                channel: channel.name,
                id: e.id,
              })
            return ok
          })
          return valid.length ? handle(valid as ChannelEntry<T>[], at) : Promise.resolve()
        }
      : (entries, at) => handle(entries as ChannelEntry<T>[], at)
    const list = this.handlers.get(channel.name) ?? []
    list.push(handler)
    this.handlers.set(channel.name, list)
  }

  /** What a module declared for the engine role (ModuleParts.engine), in the order of the modules. */
  register(part: EnginePart) {
    if (part.load) this.onLoad(part.load, part.unload)
    for (const h of part.handlers ?? []) this.on(h.channel, h.handle)
    if (part.settle) this.onSettle(part.settle)
  }

  /**
   * Runs after the handlers of each read of the bus, before the cursor moves past it: it waits for what
   * the handlers started (the executions of triggers, written as they are decided) and does what a read
   * needs once (the risk checks), so a takeover replays whatever was not committed. A settler that
   * throws (CursorHeld when it says so on purpose) keeps the cursor before the read.
   */
  onSettle(settle: () => Promise<void>) {
    this.settlers.push(settle)
  }

  /** One attempt to take the role now (start-up), then, with `keep`, keep it or stand by. */
  async start(keep: boolean) {
    this.stopped = false
    // ROLE=api never takes the role
    if (this.setting === 'api') return
    await this.attempt()
    if (keep) this.schedule(this.leader ? RENEW_MS : 200)
  }

  private schedule(ms: number) {
    if (this.stopped) return
    this.timer = setTimeout(() => void this.turn(), ms)
  }

  /** One look at the lease; whatever fails is logged and asked again later, never thrown into a timer. */
  private async turn() {
    let next = RENEW_MS
    try {
      next = await this.attempt()
    } catch (e) {
      this.logger.log('error', 'engine role check failed', { err: errText(e) })
    }
    this.schedule(next)
  }

  /** Takes or renews the lease; returns when to ask again. */
  private async attempt(): Promise<number> {
    const asked = Date.now()
    const lease = await this.leases.hold(LEASE, this.owner, ENGINE_LEASE_MS).catch((e) => {
      this.logger.log('warn', 'engine lease unavailable', { err: errText(e) })
      return { held: false, freeInMs: ENGINE_LEASE_MS, unreachable: true } as const
    })
    if (lease.held) {
      this.heldUntil = asked + ENGINE_LEASE_MS
      if (!this.leader) await this.becomeLeader()
      return RENEW_MS
    }
    const unreachable = 'unreachable' in lease && lease.unreachable === true
    // cut off from the lease store: nobody else can take the lease before it lapses, so keep the role
    // until just before then, asking again often (a blip of Redis does not reload every book)
    if (unreachable && this.leader && Date.now() < this.heldUntil - LEASE_MARGIN_MS) return 200
    if (this.leader) await this.stepDown(unreachable ? 'lease store unreachable' : 'lease lost')
    return unreachable ? 500 : Math.min(Math.max(lease.freeInMs + 1, 20), RENEW_MS)
  }

  /** Loads the books and reads the bus; on any failure leaves nothing half-taken (and the lease goes). */
  private async becomeLeader() {
    try {
      const cursor = await this.readCursor()
      const newest = await this.bus.newest()
      // start from the previous engine's cursor when it is recent, else from now. No cursor at all: it went
      // with the stream (a Redis restarted empty) or no engine ran yet; what the stream holds of the last
      // REPLAY_MAX_MS was appended since and no engine settled it (a tick accepted before this takeover):
      // it is replayed (every execution is conditional). A cursor the store did not answer for is not
      // an absent one: the previous engine may have settled that minute (a replay would count its ticks
      // in the candles again), so the engine starts from now, as with a stale cursor. Ages and starts are in
      // the bus's clock, its ids' (busNow): a host clock ahead of Redis's would take a held cursor for stale
      if (cursor === UNREADABLE)
        this.logger.log('warn', 'engine cursor unreadable: reading from the newest entry')
      const from =
        cursor === UNREADABLE
          ? newest
          : cursor
            ? busNow(this.bus) - idTime(cursor) < REPLAY_MAX_MS
              ? cursor
              : newest
            : `${Math.max(0, busNow(this.bus) - REPLAY_MAX_MS)}-0`
      for (const load of this.loaders) await load()
      this.catchUpTo = compareIds(from, newest) < 0 ? newest : null
      this.settledTo = null
      this.holding = false
      this.leader = true
      this.logger.log('info', 'engine role taken', { from, replaying: this.catchUpTo !== null })
      this.sub = this.bus.subscribe(from, (entries) => this.dispatch(entries))
    } catch (e) {
      this.logger.log('warn', 'engine role not taken', { err: e instanceof Error ? e.message : String(e) })
      await this.leave()
      for (const u of this.unloaders) u()
      await this.leases.release(LEASE, this.owner).catch(() => {})
    }
  }

  /**
   * The previous engine's cursor, null when there is none, UNREADABLE when the store did not answer: a
   * resilient store (kernel/cache/resilient.ts) answers a failed read (timeout, open circuit) as a miss,
   * and its circuit, open after that failure, tells the two apart.
   */
  private async readCursor(): Promise<string | null | typeof UNREADABLE> {
    const dep = this.store.dependency
    if (dep && !dep.up) return UNREADABLE
    let failed = false
    const cursor = await this.store.get(CURSOR_KEY).catch(() => {
      failed = true
      return null
    })
    if (cursor !== null) return cursor
    if (failed) return UNREADABLE
    if (!dep) return null
    // the breaker learns of the failure in its own microtasks: its state once they ran
    await new Promise((r) => setTimeout(r, 0))
    return dep.up ? null : UNREADABLE
  }

  private async dispatch(entries: BusEntry[]) {
    if (!this.leader) return
    const replay = this.catchUpTo !== null
    // one failing handler or settler does not stop the others (each is logged)
    // the oldest entry a settler holds (CursorHeld)
    const held: { from: string | null } = { from: null }
    const guarded = async (what: string, type: string | undefined, run: () => Promise<void>) => {
      try {
        await run()
        return true
      } catch (e) {
        if (e instanceof CursorHeld) {
          const from = e.from ?? entries[0]!.id
          if (held.from === null || compareIds(from, held.from) < 0) held.from = from
        } else
          this.logger.log('error', `engine ${what} failed`, {
            type,
            err: e instanceof Error ? e.message : String(e),
          })
        return false
      }
    }
    for (const [type, list] of groupRuns(entries))
      for (const h of this.handlers.get(type) ?? []) await guarded('handler', type, () => h(list, { replay }))
    // the cursor moves past the read only once every settler settled it (ADR 0010)
    let settled = true
    for (const settle of this.settlers) if (!(await guarded('settle', undefined, settle))) settled = false
    const last = entries.at(-1)!.id
    if (this.catchUpTo && compareIds(last, this.catchUpTo) >= 0) this.catchUpTo = null
    if (settled) {
      // the first read settled after a hold moves the cursor past the held ones at once
      const wasHeld = this.holding
      this.holding = false
      this.settledTo = last
      await this.saveCursor(last, wasHeld)
    } else if (held.from !== null && before(held.from) !== this.settledTo) {
      // held: the cursor goes just before the oldest entry held, at once (not left at the last settled
      // read's id, throttled, or from a quiet spell long before), so its age at a takeover is the held
      // entry's own (REPLAY_MAX_MS); it moves on as the holds are let go
      this.holding = true
      this.settledTo = before(held.from)
      await this.saveCursor(this.settledTo, true)
    }
  }

  /** At most every 50 ms (a takeover replays at most that much again; every execution is conditional). */
  private async saveCursor(id: string, force = false) {
    if (this.bus.kind === 'local') return
    const now = Date.now()
    if (!force && now - this.savedAt < 50) return
    this.savedAt = now
    await this.store.set(CURSOR_KEY, id).catch(() => {})
  }

  /** Stops reading the bus as the engine. */
  private async leave() {
    this.leader = false
    const sub = this.sub
    this.sub = null
    await sub?.close()
  }

  private async stepDown(reason: string) {
    this.logger.log('warn', 'engine role given up', { reason })
    await this.leave()
    for (const u of this.unloaders) u()
  }

  async stop() {
    this.stopped = true
    if (this.timer) clearTimeout(this.timer)
    if (!this.leader) return
    await this.leave()
    // where every read before is settled: not past a read a settler holds (its retries go with the role)
    if (this.settledTo) await this.saveCursor(this.settledTo, true)
    await this.leases.release(LEASE, this.owner).catch(() => {})
  }
}

/** The id just before a bus id (`ms-seq`): reading from it starts with that entry. */
export function before(id: string): string {
  const [ms, seq] = id.split('-')
  if (seq === undefined || !/^\d+$/.test(seq) || !/^\d+$/.test(ms ?? '')) return id
  if (BigInt(seq) > 0n) return `${ms}-${BigInt(seq) - 1n}`
  return BigInt(ms!) > 0n ? `${BigInt(ms!) - 1n}-18446744073709551615` : id
}

/** Consecutive entries of one type, in order (a handler gets a run of ticks at once). */
function groupRuns(entries: BusEntry[]): [string, BusEntry[]][] {
  const runs: [string, BusEntry[]][] = []
  for (const e of entries) {
    const last = runs.at(-1)
    if (last && last[0] === e.type) last[1].push(e)
    else runs.push([e.type, [e]])
  }
  return runs
}
