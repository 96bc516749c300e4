import { RedisClient } from 'bun'
import { INCR_WITH_TTL, type KeyValueStore, LEASE, leaseAnswer, UNLEASE } from './store'

/** Redis over TCP with Bun's built-in client. Commands fail fast while disconnected (no offline queue). */
export class RedisStore implements KeyValueStore {
  readonly kind = 'redis' as const
  private readonly client: RedisClient

  constructor(url: string, connectionTimeoutMs = 2000) {
    this.client = new RedisClient(url, {
      connectionTimeout: connectionTimeoutMs,
      autoReconnect: true,
      maxRetries: 2 ** 32 - 1,
      enableOfflineQueue: false,
      enableAutoPipelining: true,
    })
  }

  /** Bun connects lazily; without the offline queue a command must wait for the connection itself. */
  private async c(): Promise<RedisClient> {
    if (!this.client.connected) await this.client.connect()
    return this.client
  }

  async get(key: string) {
    return (await this.c()).get(key)
  }

  async set(key: string, value: string, ttlMs?: number) {
    const c = await this.c()
    if (ttlMs === undefined) await c.set(key, value)
    else await c.set(key, value, 'PX', Math.max(1, Math.ceil(ttlMs)))
  }

  async setNX(key: string, value: string, ttlMs: number) {
    const r = await (await this.c()).send('SET', [
      key,
      value,
      'PX',
      String(Math.max(1, Math.ceil(ttlMs))),
      'NX',
    ])
    return r === 'OK'
  }

  async del(...keys: string[]) {
    if (keys.length) await (await this.c()).send('DEL', keys)
  }

  async incr(key: string, ttlMs: number) {
    const r = await (await this.c()).send('EVAL', [
      INCR_WITH_TTL,
      '1',
      key,
      String(Math.max(1, Math.ceil(ttlMs))),
    ])
    return Number(r)
  }

  async lease(key: string, owner: string, ttlMs: number) {
    const ttl = String(Math.max(1, Math.ceil(ttlMs)))
    return leaseAnswer(Number(await (await this.c()).send('EVAL', [LEASE, '1', key, owner, ttl])))
  }

  async unlease(key: string, owner: string) {
    await (await this.c()).send('EVAL', [UNLEASE, '1', key, owner])
  }

  async ping() {
    return (await (await this.c()).send('PING', [])) === 'PONG'
  }

  async close() {
    this.client.close()
  }
}
