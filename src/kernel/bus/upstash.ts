import type { Logger } from '../logger'
import { backoff, Dependency, errText } from '../resilience'
import { drainBacklog } from './backlog'
import { type BusHandler, handOver, type MessageBus, type Subscription } from './bus'
import {
  Appender,
  BUS_KEEP_MS,
  dropLogger,
  newestOf,
  onTime,
  type Raw,
  rangeOf,
  rowsAfter,
  type Send,
} from './stream'

/** How long one call of the bus may take before it counts as failed. */
const CALL_TIMEOUT_MS = 2000

/**
 * The bus on the same Redis stream through Upstash's REST protocol (the edge has no long-lived
 * connection): appends with XADD; a subscription polls XRANGE (an API instance at the edge subscribes to
 * nothing; the Bun engine reads the stream over TCP).
 */
export class UpstashBus implements MessageBus {
  readonly kind = 'upstash' as const
  /** The edge's bus (src/main/worker.ts): its work is a request's, each request's flushes its backlog. */
  readonly requestScoped = true
  readonly dependency: Dependency
  private readonly subs = new Set<PollingSubscription>()
  private readonly send: Send
  private readonly appender: Appender

  constructor(
    url: string,
    token: string,
    private readonly logger: Logger,
    private readonly pollMs = 100,
    keepMs = BUS_KEEP_MS,
  ) {
    this.dependency = new Dependency('bus', CALL_TIMEOUT_MS, logger, () => this.post(url, token, 'PING', []))
    this.send = (cmd, args) => this.dependency.call(() => this.post(url, token, cmd, args))
    this.appender = new Appender(this.send, CALL_TIMEOUT_MS, logger, keepMs)
  }

  /** Redis's clock less this host's, as measured by the appends (stream.ts, StreamClock); null before one. */
  get clockOffsetMs() {
    return this.appender.clock.offset
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

  /** Appends under the call timeout, a tick with a deadline in Redis's clock, as RedisBus.publish (stream.ts, Appender). */
  publish(type: string, data: unknown) {
    return this.appender.append(type, data)
  }

  subscribe(from: string, handler: BusHandler, opts?: { pollMs?: number }): Subscription {
    const sub = new PollingSubscription(
      {
        rows: (after, limit) => rowsAfter(this.send, after, limit),
        newest: () => this.newest(),
      },
      from,
      handler,
      opts?.pollMs ?? this.pollMs,
      this.logger,
      () => this.subs.delete(sub),
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
    // the changes it refused go first, while it can still send them (backlog.ts)
    await drainBacklog(this)
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

  private readonly dropped: ReturnType<typeof dropLogger>

  constructor(
    /** The stream's rows as stored (late ones too: the poller positions itself past them), and its newest id. */
    private readonly bus: {
      rows(after: string, limit: number): Promise<Raw[] | null>
      newest(): Promise<string>
    },
    from: string,
    private readonly handler: BusHandler,
    private readonly pollMs: number,
    private readonly logger: Logger,
    private readonly detach: () => void,
  ) {
    this.position = from
    this.dropped = dropLogger(logger)
    this.loop = this.run()
  }

  private async run() {
    let failures = 0
    while (!this.closed) {
      let rows: Raw[] = []
      try {
        if (this.position === '$') this.position = await this.bus.newest()
        const page = await this.bus.rows(this.position, PAGE)
        if (page === null) {
          // trimmed past this position (a poller that fell minutes behind): what lay between is gone, and
          // asking from here again would find nothing for ever; it goes on from the newest entry
          this.logger.log('warn', 'bus trimmed past a poller: it goes on from the newest entry', {
            position: this.position,
          })
          this.position = await this.bus.newest()
        }
        rows = page ?? []
        failures = 0
        this.lastReadAt = Date.now()
      } catch (e) {
        if (failures++ % 50 === 0) this.logger.log('warn', 'bus poll failed', { err: errText(e) })
        await new Promise((r) => setTimeout(r, backoff(failures, 2000)))
        continue
      }
      if (rows.length && !this.closed) {
        // past the late ones too (dropped: their publishers were told they failed)
        this.position = rows.at(-1)![0]
        const { entries, late } = onTime(rows)
        this.dropped(late, this.position)
        if (entries.length) await handOver(this.handler, entries, this.logger)
        // a full page: more is waiting, asked for at once; otherwise one call per interval however busy
        // the bus is (each call is a billed REST request)
        if (rows.length === PAGE) continue
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
