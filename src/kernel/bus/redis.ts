import type { RedisClient } from 'bun'
import type { Logger } from '../logger'
import { connected, openRedis } from '../redis'
import { backoff, Dependency } from '../resilience'
import { drainBacklog } from './backlog'
import { type BusHandler, handOver, type MessageBus, type Subscription } from './bus'
import { Appender, BUS_KEEP_MS, BUS_STREAM, dropLogger, newestOf, onTime, type Raw, rangeOf } from './stream'

/** How long one call of the bus may take before it counts as failed (a blocking read is apart). */
const CALL_TIMEOUT_MS = 1000
const BLOCK_MS = 1000

/**
 * The bus on a Redis stream. Each subscription reads with a blocking XREAD on a connection of its own,
 * so an entry reaches every instance about a millisecond after it is appended. While Redis is away,
 * appends fail at once (a circuit breaker, kernel/resilience) and readers retry with a capped backoff,
 * then resume from their position: nothing appended before the outage is skipped. A tick that lands past
 * its publish bound (a stalled Redis running an XADD whose call timed out) is dropped by every reader
 * (stream.ts, landedLate; the bound is in Redis's clock, so the hosts' skew cancels): a price whose publish
 * failed is never delivered later. A change notice is delivered however late.
 */
export class RedisBus implements MessageBus {
  readonly kind = 'redis' as const
  readonly dependency: Dependency
  private readonly client: RedisClient
  private readonly subs = new Set<RedisSubscription>()
  private readonly appender: Appender

  constructor(
    private readonly url: string,
    private readonly logger: Logger,
    keepMs = BUS_KEEP_MS,
  ) {
    this.client = openRedis(url)
    this.dependency = new Dependency('bus', CALL_TIMEOUT_MS, logger, async () =>
      (await connected(this.client)).send('PING', []),
    )
    this.appender = new Appender(this.send, CALL_TIMEOUT_MS, logger, keepMs)
  }

  /** Redis's clock less this host's, as measured by the appends (stream.ts, StreamClock); null before one. */
  get clockOffsetMs() {
    return this.appender.clock.offset
  }

  private readonly send = (cmd: string, args: string[]) =>
    this.dependency.call(async () => (await connected(this.client)).send(cmd, args))

  /**
   * Appends under the call timeout (stream.ts, Appender): a tick carries a deadline in Redis's clock, since
   * a timed-out XADD is not cancelled (it is on the socket; a stalled Redis runs it when it resumes), so
   * readers drop it when it lands past the deadline, and an answer past it is a failure here too.
   */
  publish(type: string, data: unknown) {
    return this.appender.append(type, data)
  }

  subscribe(from: string, handler: BusHandler): Subscription {
    const sub = new RedisSubscription(this.url, from, handler, this, this.logger, () => this.subs.delete(sub))
    this.subs.add(sub)
    return sub
  }

  async range(after: string, limit: number) {
    return rangeOf(this.send, after, limit)
  }

  async newest() {
    return newestOf(this.send)
  }

  async close() {
    // the changes it refused go first, while it can still send them (backlog.ts)
    await drainBacklog(this)
    this.dependency.close()
    await Promise.all([...this.subs].map((s) => s.close()))
    this.client.close()
  }
}

class RedisSubscription implements Subscription {
  position: string
  lastReadAt = Date.now()
  private readonly reader: RedisClient
  private closed = false
  private readonly loop: Promise<void>
  private readonly dropped: ReturnType<typeof dropLogger>

  constructor(
    url: string,
    from: string,
    private readonly handler: BusHandler,
    private readonly bus: RedisBus,
    private readonly logger: Logger,
    private readonly detach: () => void,
  ) {
    this.position = from
    this.dropped = dropLogger(logger)
    this.reader = openRedis(url, { pipelining: false })
    this.loop = this.run()
  }

  /** Reads until closed; a failure (Redis away, a handler's error) is logged and retried, never thrown. */
  private async run() {
    let failures = 0
    while (!this.closed) {
      try {
        if (this.position === '$') this.position = await this.bus.newest()
        const r = (await (
          await connected(this.reader)
        ).send('XREAD', [
          'COUNT',
          '1000',
          'BLOCK',
          String(BLOCK_MS),
          'STREAMS',
          BUS_STREAM,
          this.position,
        ])) as Record<string, Raw[]> | [string, Raw[]][] | null
        if (failures > 0) this.logger.log('info', 'bus read resumed', { after_failures: failures })
        failures = 0
        this.lastReadAt = Date.now()
        if (!r || this.closed) continue
        const rows = Array.isArray(r) ? (r[0]?.[1] ?? []) : (r[BUS_STREAM] ?? [])
        if (rows.length === 0) continue
        // past the late ones too (dropped: their publishers were told they failed)
        this.position = rows.at(-1)![0]
        const { entries, late } = onTime(rows)
        this.dropped(late, this.position)
        if (entries.length) await handOver(this.handler, entries, this.logger)
      } catch (e) {
        if (this.closed) break
        // one line per outage and then every 50th retry, not one every 200 ms for ever
        if (failures % 50 === 0)
          this.logger.log('warn', 'bus read failed', {
            err: e instanceof Error ? e.message : String(e),
            failures,
          })
        this.bus.dependency.fail(e)
        await Bun.sleep(backoff(failures++, 2000))
      }
    }
  }

  async close() {
    if (this.closed) return
    this.closed = true
    this.detach()
    this.reader.close()
    // a read waiting for Redis to come back ends with the close; the bound is for a client that does not
    await Promise.race([this.loop.catch(() => {}), Bun.sleep(2000)])
  }
}
