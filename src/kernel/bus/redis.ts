import { RedisClient } from 'bun'
import type { Logger } from '../logger'
import type { BusHandler, MessageBus, Subscription } from './bus'
import { BUS_STREAM, newestOf, parseEntry, type Raw, rangeOf, xaddArgs } from './stream'

/**
 * The bus on a Redis stream. Each subscription reads with a blocking XREAD on a connection of its own,
 * so an entry reaches every instance about a millisecond after it is appended.
 */
export class RedisBus implements MessageBus {
  readonly kind = 'redis' as const
  private readonly client: RedisClient
  private readonly subs = new Set<RedisSubscription>()

  constructor(
    private readonly url: string,
    private readonly logger: Logger,
  ) {
    this.client = new RedisClient(url, { enableAutoPipelining: true, autoReconnect: true })
  }

  async publish(type: string, data: unknown) {
    return String(await this.client.send('XADD', xaddArgs(type, data)))
  }

  subscribe(from: string, handler: BusHandler): Subscription {
    const sub = new RedisSubscription(this.url, from, handler, this, this.logger, () => this.subs.delete(sub))
    this.subs.add(sub)
    return sub
  }

  async range(after: string, limit: number) {
    return rangeOf((cmd, args) => this.client.send(cmd, args), after, limit)
  }

  async newest() {
    return newestOf((cmd, args) => this.client.send(cmd, args))
  }

  async close() {
    await Promise.all([...this.subs].map((s) => s.close()))
    this.client.close()
  }
}

class RedisSubscription implements Subscription {
  position: string
  private readonly reader: RedisClient
  private closed = false
  private readonly loop: Promise<void>

  constructor(
    url: string,
    from: string,
    private readonly handler: BusHandler,
    private readonly bus: RedisBus,
    private readonly logger: Logger,
    private readonly detach: () => void,
  ) {
    this.position = from
    this.reader = new RedisClient(url, { autoReconnect: true, enableAutoPipelining: false })
    this.loop = this.run()
  }

  private async run() {
    if (this.position === '$') this.position = await this.retrying(() => this.bus.newest())
    while (!this.closed) {
      try {
        const r = (await this.reader.send('XREAD', [
          'COUNT',
          '1000',
          'BLOCK',
          '1000',
          'STREAMS',
          BUS_STREAM,
          this.position,
        ])) as Record<string, Raw[]> | [string, Raw[]][] | null
        if (!r || this.closed) continue
        const rows = Array.isArray(r) ? (r[0]?.[1] ?? []) : (r[BUS_STREAM] ?? [])
        if (rows.length === 0) continue
        const entries = rows.map(parseEntry)
        this.position = entries.at(-1)!.id
        await this.handler(entries)
      } catch (e) {
        if (this.closed) break
        this.logger.log('warn', 'bus read failed', { err: e instanceof Error ? e.message : String(e) })
        await Bun.sleep(200)
      }
    }
  }

  private async retrying<T>(f: () => Promise<T>): Promise<T> {
    for (;;) {
      try {
        return await f()
      } catch (e) {
        if (this.closed) throw e
        await Bun.sleep(200)
      }
    }
  }

  async close() {
    if (this.closed) return
    this.closed = true
    this.detach()
    this.reader.close()
    await this.loop.catch(() => {})
  }
}
