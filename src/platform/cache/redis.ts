import { RedisClient } from 'bun'
import { INCR_WITH_TTL, type KeyValueStore } from './store'

/** Redis over TCP with Bun's built-in client. Commands fail fast while disconnected (no offline queue). */
export class RedisStore implements KeyValueStore {
  readonly kind = 'redis' as const
  private readonly client: RedisClient

  constructor(url: string, connectionTimeoutMs = 2000) {
    this.client = new RedisClient(url, {
      connectionTimeout: connectionTimeoutMs,
      autoReconnect: true,
      maxRetries: Number.MAX_SAFE_INTEGER,
      enableOfflineQueue: false,
      enableAutoPipelining: true,
    })
  }

  get(key: string) {
    return this.client.get(key)
  }

  async set(key: string, value: string, ttlMs?: number) {
    if (ttlMs === undefined) await this.client.set(key, value)
    else await this.client.set(key, value, 'PX', Math.max(1, Math.ceil(ttlMs)))
  }

  async setNX(key: string, value: string, ttlMs: number) {
    const r = await this.client.send('SET', [key, value, 'PX', String(Math.max(1, Math.ceil(ttlMs))), 'NX'])
    return r === 'OK'
  }

  async del(...keys: string[]) {
    if (keys.length) await this.client.send('DEL', keys)
  }

  async incr(key: string, ttlMs: number) {
    const r = await this.client.send('EVAL', [INCR_WITH_TTL, '1', key, String(Math.max(1, Math.ceil(ttlMs)))])
    return Number(r)
  }

  async ping() {
    return (await this.client.send('PING', [])) === 'PONG'
  }

  async close() {
    this.client.close()
  }
}
