import type { Logger } from '../logger'
import { backoff, Dependency, errText } from '../resilience'
import { type BusEntry, type BusHandler, handOver, idTime, type MessageBus, type Subscription } from './bus'
import { BUS_KEEP_MS, newestOf, rangeOf, type Send, xaddArgs } from './stream'

/**
 * The bus on the same Redis stream through Upstash's REST protocol (the edge has no long-lived
 * connection): appends with XADD; a subscription polls XRANGE (an API instance at the edge subscribes to
 * nothing; the Bun engine reads the stream over TCP).
 */
export class UpstashBus implements MessageBus {
  readonly kind = 'upstash' as const
  readonly dependency: Dependency
  private readonly subs = new Set<PollingSubscription>()
  private readonly send: Send
  /** The time part of the last id appended here: what the next append trims before (stream.ts). */
  private lastMs = 0

  constructor(
    url: string,
    token: string,
    private readonly logger: Logger,
    private readonly pollMs = 100,
    private readonly keepMs = BUS_KEEP_MS,
  ) {
    this.dependency = new Dependency('bus', 2000, logger, () => this.post(url, token, 'PING', []))
    this.send = (cmd, args) => this.dependency.call(() => this.post(url, token, cmd, args))
  }

  private async post(url: string, token: string, cmd: string, args: string[]) {
    const res = await fetch(url, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify([cmd, ...args]),
    })
    const body = (await res.json()) as { result?: unknown; error?: string }
    if (body.error) throw new Error(`upstash ${cmd}: ${body.error}`)
    return body.result
  }

  async publish(type: string, data: unknown) {
    const id = String(await this.send('XADD', xaddArgs(type, data, this.lastMs, this.keepMs)))
    this.lastMs = Math.max(this.lastMs, idTime(id))
    return id
  }

  subscribe(from: string, handler: BusHandler, opts?: { pollMs?: number }): Subscription {
    const sub = new PollingSubscription(this, from, handler, opts?.pollMs ?? this.pollMs, this.logger, () =>
      this.subs.delete(sub),
    )
    this.subs.add(sub)
    return sub
  }

  range(after: string, limit: number) {
    return rangeOf(this.send, after, limit)
  }

  newest() {
    return newestOf(this.send)
  }

  async close() {
    this.dependency.close()
    await Promise.all([...this.subs].map((s) => s.close()))
  }
}

/** Entries one poll asks for. */
const PAGE = 1000

class PollingSubscription implements Subscription {
  position: string
  lastReadAt = Date.now()
  private closed = false
  private readonly loop: Promise<void>

  constructor(
    private readonly bus: MessageBus,
    from: string,
    private readonly handler: BusHandler,
    private readonly pollMs: number,
    private readonly logger: Logger,
    private readonly detach: () => void,
  ) {
    this.position = from
    this.loop = this.run()
  }

  private async run() {
    let failures = 0
    while (!this.closed) {
      let entries: BusEntry[] = []
      try {
        if (this.position === '$') this.position = await this.bus.newest()
        const page = await this.bus.range(this.position, PAGE)
        if (page === null) {
          // trimmed past this position (a poller that fell minutes behind): what lay between is gone, and
          // asking from here again would find nothing for ever; it goes on from the newest entry
          this.logger.log('warn', 'bus trimmed past a poller: it goes on from the newest entry', {
            position: this.position,
          })
          this.position = await this.bus.newest()
        }
        entries = page ?? []
        failures = 0
        this.lastReadAt = Date.now()
      } catch (e) {
        if (failures++ % 50 === 0) this.logger.log('warn', 'bus poll failed', { err: errText(e) })
        await new Promise((r) => setTimeout(r, backoff(failures, 2000)))
        continue
      }
      if (entries.length && !this.closed) {
        this.position = entries.at(-1)!.id
        await handOver(this.handler, entries, this.logger)
        // a full page: more is waiting, asked for at once; otherwise one call per interval however busy
        // the bus is (each call is a billed REST request)
        if (entries.length === PAGE) continue
      }
      await new Promise((r) => setTimeout(r, this.pollMs))
    }
  }

  async close() {
    this.closed = true
    this.detach()
    await this.loop.catch(() => {})
  }
}
