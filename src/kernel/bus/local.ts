import type { BusEntry, BusHandler, MessageBus, Subscription } from './bus'
import { compareIds, ZERO_ID } from './bus'

/**
 * What the bus keeps, by weight (a batch of ticks weighs its ticks, another entry 1): about 4 MB of ticks
 * whatever the batches' sizes. It serves a resume (REPLAY_ENTRIES of market/quotes.ts reads at most 4,096
 * entries, a replay past 500 ticks sends the latest quotes instead); kept by count, 16,384 batches of an
 * ingest's 5,000 ticks were gigabytes.
 */
const KEEP = 65_536

/**
 * The bus of one process (embedded default). `publish` resolves once every subscriber has handled the
 * entry, so a tick posted to the ingest route has been applied (triggers fired) when it answers. A handler
 * must not await a publish of its own (it would wait for itself).
 */
export class LocalBus implements MessageBus {
  readonly kind = 'local' as const
  /** The entries kept, from `head` on (what is before it is dropped, spliced away now and then). */
  private readonly kept: { entry: BusEntry; weight: number }[] = []
  private head = 0
  private weight = 0
  private readonly subscribers = new Set<LocalSubscription>()
  private lastMs = 0
  /** Id of the newest entry no longer kept. */
  private dropped: string | null = null
  private n = 0

  constructor(private readonly now: () => number = Date.now) {}

  async publish(type: string, data: unknown, weight = 1) {
    const ms = Math.max(this.now(), this.lastMs)
    this.n = ms === this.lastMs ? this.n + 1 : 0
    this.lastMs = ms
    const entry: BusEntry = { id: `${ms}-${this.n}`, type, data }
    this.kept.push({ entry, weight })
    this.weight += weight
    // the newest entry stays whatever it weighs
    while (this.weight > KEEP && this.head < this.kept.length - 1) {
      const old = this.kept[this.head++]!
      this.weight -= old.weight
      this.dropped = old.entry.id
    }
    if (this.head > 1024 && this.head * 2 > this.kept.length) {
      this.kept.splice(0, this.head)
      this.head = 0
    }
    await Promise.all([...this.subscribers].map((s) => s.deliver(entry)))
    return entry.id
  }

  /** The entries kept after `after`, oldest first, at most `limit`. */
  private after(after: string, limit = Number.POSITIVE_INFINITY) {
    // ids only grow: the first one past `after` by bisection
    let lo = this.head
    let hi = this.kept.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (compareIds(this.kept[mid]!.entry.id, after) > 0) hi = mid
      else lo = mid + 1
    }
    const out: BusEntry[] = []
    for (let i = lo; i < this.kept.length && out.length < limit; i++) out.push(this.kept[i]!.entry)
    return out
  }

  subscribe(from: string, handler: BusHandler): Subscription {
    const sub = new LocalSubscription(handler, () => this.subscribers.delete(sub))
    const start = from === '$' ? this.newestSync() : from
    sub.position = start
    const backlog = this.after(start)
    this.subscribers.add(sub)
    if (backlog.length) void sub.deliverMany(backlog)
    return sub
  }

  async range(after: string, limit: number) {
    // entries after `after` may have been dropped: only the last one dropped is a safe start
    if (this.dropped && compareIds(after, this.dropped) < 0) return null
    return this.after(after, limit)
  }

  /** The last id handed out ('0-0' before the first). */
  private newestSync() {
    return `${this.lastMs}-${this.n}`
  }

  async newest() {
    return this.newestSync()
  }

  async close() {
    this.subscribers.clear()
  }
}

class LocalSubscription implements Subscription {
  position = ZERO_ID
  get lastReadAt() {
    return Date.now()
  }
  private chain: Promise<void> = Promise.resolve()
  private closed = false

  constructor(
    private readonly handler: BusHandler,
    private readonly detach: () => void,
  ) {}

  deliver(entry: BusEntry) {
    return this.deliverMany([entry])
  }

  deliverMany(entries: BusEntry[]) {
    const run = this.chain.then(async () => {
      const fresh = entries.filter((e) => compareIds(e.id, this.position) > 0)
      if (this.closed || fresh.length === 0) return
      this.position = fresh.at(-1)!.id
      await this.handler(fresh)
    })
    this.chain = run.catch(() => {})
    return run
  }

  async close() {
    this.closed = true
    this.detach()
    await this.chain
  }
}
