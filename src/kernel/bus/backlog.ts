import type { Logger } from '../logger'
import { backoff, errText } from '../resilience'
import type { MessageBus } from './bus'
import { BUS_KEEP_MS } from './stream'

/** Changes a bus keeps waiting for it (all channels): past this, the oldest are dropped. */
export const BACKLOG_MAX = 10_000
/**
 * How long a change waits for its bus: as long as the stream keeps an entry. A bus away longer has cost the
 * engine its role too (its lease and cursor live beside the bus), and the takeover reloads every book.
 */
export const BACKLOG_MAX_AGE_MS = BUS_KEEP_MS
/** The longest pause between two tries while the bus is away. */
const RETRY_CAP_MS = 2000
/** How long closing the bus waits for its backlog (under the shutdown's 2 s step: src/main/server.ts). */
export const CLOSE_DRAIN_MS = 1500

interface Pending {
  type: string
  data: unknown
  /** When it was first refused (Date.now()). */
  at: number
}

export interface BacklogOptions {
  max?: number
  maxAgeMs?: number
  now?: () => number
  /**
   * Whether it tries again by itself (a timer). Not at the edge (MessageBus.requestScoped): a timer armed
   * in a request never fires once it has answered, and would hold its channel for the isolate's life;
   * there each request flushes (publishChange, and the Worker after every request).
   */
  timers?: boolean
}

/**
 * What one request at the edge sends of the backlog (in the request when its channel is held, and after its
 * answer): each change is a subrequest of the request's 1,000, and after an outage the backlog may hold
 * thousands. The rest goes with the next requests.
 */
export const EDGE_FLUSH_MAX = 20

/** A pass that has not settled by then was cut off with its request (the edge): the next one starts anew. */
const PASS_ABANDONED_MS = 10_000

/**
 * The changes a bus refused (kernel/bus/channel.ts, publishChange), in the order they were published, sent
 * again with a capped backoff until the bus answers. While a channel has a change waiting, a later change
 * of it waits behind it, so an older row never lands after a newer one the same instance published after
 * the refusal (one already on its way when the refusal came may still land first: the engines' handlers
 * keep the newer version by `updated_at`). Bounded by count and age: what falls out is logged as an error,
 * and only the engines' safety nets find it then (the resync jobs for rows they re-read, a takeover for
 * the rest).
 */
export class ChangeBacklog {
  private readonly queue: Pending[] = []
  private head = 0
  private readonly byType = new Map<string, number>()
  private failures = 0
  private timer: ReturnType<typeof setTimeout> | null = null
  private flushing: Promise<void> | null = null
  private flushingSince = 0
  private closed = false
  /** Since when the bus has refused changes (Date.now()), for the line that says it took them again. */
  private since: number | null = null
  private readonly max: number
  private readonly maxAgeMs: number
  private readonly now: () => number
  private readonly timers: boolean

  constructor(
    private readonly publish: (type: string, data: unknown) => Promise<unknown>,
    private readonly logger: Logger,
    o: BacklogOptions = {},
  ) {
    this.max = o.max ?? BACKLOG_MAX
    this.maxAgeMs = o.maxAgeMs ?? BACKLOG_MAX_AGE_MS
    this.now = o.now ?? Date.now
    this.timers = o.timers ?? true
  }

  /** Changes waiting. */
  get size() {
    return this.queue.length - this.head
  }

  /** How long the oldest change has waited (ms); 0 when none. */
  get oldestAgeMs() {
    const first = this.queue[this.head]
    return first ? Math.max(0, this.now() - first.at) : 0
  }

  /** Whether a change of this channel must wait behind an earlier one. */
  holds(type: string) {
    return (this.byType.get(type) ?? 0) > 0
  }

  /** Queues a change the bus refused (`err`), or that must wait behind one; never throws. */
  add(type: string, data: unknown, err?: unknown) {
    if (this.closed) {
      this.logger.log('error', 'bus change lost: the bus is closed', { type })
      return
    }
    // a change the bus could never take (not JSON) would hold its channel until it aged out
    try {
      JSON.stringify(data)
    } catch (e) {
      this.logger.log('error', 'bus change lost: it cannot be written', { type, err: errText(e) })
      return
    }
    if (this.size === 0 && err !== undefined) {
      this.since = this.now()
      this.logger.log('warn', 'change not published; sent again once the bus answers', {
        type,
        err: errText(err),
      })
    }
    this.queue.push({ type, data, at: this.now() })
    this.byType.set(type, (this.byType.get(type) ?? 0) + 1)
    this.expire()
    this.schedule()
  }

  /**
   * Drops what is past the bounds (the oldest first, by count, then by age), with an error line: the
   * engine finds those changes only through its safety nets.
   */
  private expire() {
    let dropped = 0
    const types = new Set<string>()
    const cut = this.now() - this.maxAgeMs
    while (this.size > 0 && (this.size > this.max || this.queue[this.head]!.at < cut)) {
      const p = this.shift()
      types.add(p.type)
      dropped++
    }
    if (dropped > 0)
      this.logger.log(
        'error',
        'bus changes dropped from the backlog past its bound; the engine finds them at its resync or next takeover',
        { dropped, types: [...types], max: this.max, max_age_ms: this.maxAgeMs, waiting: this.size },
      )
  }

  private shift() {
    const p = this.queue[this.head]!
    this.queue[this.head++] = undefined as unknown as Pending
    const n = (this.byType.get(p.type) ?? 1) - 1
    if (n > 0) this.byType.set(p.type, n)
    else this.byType.delete(p.type)
    if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue.splice(0, this.head)
      this.head = 0
    }
    return p
  }

  private schedule() {
    if (!this.timers || this.timer || this.flushing || this.closed || this.size === 0) return
    const t = setTimeout(
      () => {
        this.timer = null
        void this.flush()
      },
      backoff(this.failures, RETRY_CAP_MS),
    )
    ;(t as { unref?: () => void }).unref?.()
    this.timer = t
  }

  /** One pass: sends the waiting changes in order until one is refused (then tries again later). */
  /** `max`: at most so many sent by this pass (a request at the edge sends its share, EDGE_FLUSH_MAX). */
  flush(max = Number.POSITIVE_INFINITY): Promise<void> {
    if (this.flushing && this.now() - this.flushingSince > PASS_ABANDONED_MS) this.flushing = null
    if (!this.flushing) {
      this.flushingSince = this.now()
      const pass: Promise<void> = this.pass(max).finally(() => {
        if (this.flushing !== pass) return
        this.flushing = null
        this.schedule()
      })
      this.flushing = pass
    }
    return this.flushing
  }

  private async pass(max: number) {
    this.expire()
    let sent = 0
    while (this.size > 0 && sent < max) {
      const p = this.queue[this.head]!
      try {
        await this.publish(p.type, p.data)
      } catch (e) {
        // one line per outage and then every 50th try
        if (this.failures % 50 === 0)
          this.logger.log('warn', 'bus backlog not sent yet', {
            waiting: this.size,
            oldest_ms: this.oldestAgeMs,
            err: errText(e),
            failures: this.failures,
          })
        this.failures++
        return
      }
      // the bounds may have dropped it while it was sent
      if (this.queue[this.head] === p) this.shift()
      sent++
    }
    if (sent > 0)
      this.logger.log('info', 'bus backlog sent', {
        sent,
        waited_ms: this.since === null ? 0 : this.now() - this.since,
      })
    this.failures = 0
    // a pass bounded by `max` leaves the rest to the next: the outage's start stays until it is all sent
    if (this.size === 0) this.since = null
  }

  /**
   * Sends what waits, trying again for up to `withinMs`, then stops; what is left is logged as lost (the
   * engine's next takeover finds it). Changes added after are lost too (the bus is closing).
   */
  async close(withinMs = CLOSE_DRAIN_MS) {
    if (this.timer) clearTimeout(this.timer)
    this.timer = null
    const until = this.now() + withinMs
    while (this.size > 0 && this.now() < until) {
      await this.flush()
      if (this.size > 0) await pause(Math.min(100, Math.max(0, until - this.now())))
    }
    this.closed = true
    if (this.timer) clearTimeout(this.timer)
    this.timer = null
    if (this.size > 0)
      this.logger.log(
        'error',
        'bus changes lost: the bus closed before it took them; the engine finds them at its resync or next takeover',
        { lost: this.size, types: [...this.byType.keys()] },
      )
  }
}

/** A pause that any runtime has (the edge has no Bun.sleep). */
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms))

const backlogs = new WeakMap<MessageBus, ChangeBacklog>()

/** The backlog of a bus, made on its first refused change (with that publisher's logger). */
export function backlogOf(bus: MessageBus, logger: Logger): ChangeBacklog {
  let b = backlogs.get(bus)
  if (!b) {
    b = new ChangeBacklog((type, data) => bus.publish(type, data), logger, { timers: !bus.requestScoped })
    backlogs.set(bus, b)
  }
  return b
}

/** The backlog of a bus if it has one (nothing was ever refused: none). */
export const backlogIfAny = (bus: MessageBus) => backlogs.get(bus)

/** Closing a bus: its backlog is sent first, for up to CLOSE_DRAIN_MS (a bus without one: nothing to do). */
export const drainBacklog = async (bus: MessageBus) => backlogs.get(bus)?.close()
