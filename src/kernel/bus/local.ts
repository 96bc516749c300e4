import type { BusEntry, BusHandler, MessageBus, Subscription } from './bus'
import { compareIds, ZERO_ID } from './bus'

const KEEP = 16_384

/**
 * The bus of one process (embedded default). `publish` resolves once every subscriber has handled the
 * entry, so a tick posted to the ingest route has been applied (triggers fired) when it answers. A handler
 * must not await a publish of its own (it would wait for itself).
 */
export class LocalBus implements MessageBus {
  readonly kind = 'local' as const
  private readonly kept: BusEntry[] = []
  private readonly subscribers = new Set<LocalSubscription>()
  private lastMs = 0
  /** Id of the newest entry no longer kept. */
  private dropped: string | null = null
  private n = 0

  constructor(private readonly now: () => number = Date.now) {}

  async publish(type: string, data: unknown) {
    const ms = Math.max(this.now(), this.lastMs)
    this.n = ms === this.lastMs ? this.n + 1 : 0
    this.lastMs = ms
    const entry: BusEntry = { id: `${ms}-${this.n}`, type, data }
    this.kept.push(entry)
    if (this.kept.length > KEEP) this.dropped = this.kept.splice(0, this.kept.length - KEEP).at(-1)!.id
    await Promise.all([...this.subscribers].map((s) => s.deliver(entry)))
    return entry.id
  }

  subscribe(from: string, handler: BusHandler): Subscription {
    const sub = new LocalSubscription(handler, () => this.subscribers.delete(sub))
    const start = from === '$' ? this.newestSync() : from
    sub.position = start
    const backlog = this.kept.filter((e) => compareIds(e.id, start) > 0)
    this.subscribers.add(sub)
    if (backlog.length) void sub.deliverMany(backlog)
    return sub
  }

  async range(after: string, limit: number) {
    // entries after `after` may have been dropped: only the last one dropped is a safe start
    if (this.dropped && compareIds(after, this.dropped) < 0) return null
    return this.kept.filter((e) => compareIds(e.id, after) > 0).slice(0, limit)
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
