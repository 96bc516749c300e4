import type { RedisClient } from 'bun'
import { connected, openRedis } from '../redis'
import {
  chunks,
  GET_MANY_PAGE,
  INCR_WITH_TTL,
  type KeyValueStore,
  LEASE,
  leaseAnswer,
  SET_IF,
  SET_MANY,
  setManyCalls,
  UNLEASE,
} from './store'

/** Redis over TCP with Bun's built-in client (kernel/redis: reconnects for ever, no offline queue). */
export class RedisStore implements KeyValueStore {
  readonly kind = 'redis' as const
  private readonly client: RedisClient

  constructor(url: string, connectionTimeoutMs = 2000) {
    this.client = openRedis(url, { connectionTimeoutMs })
  }

  private c(): Promise<RedisClient> {
    return connected(this.client)
  }

  async get(key: string) {
    return (await this.c()).get(key)
  }

  async set(key: string, value: string, ttlMs?: number) {
    const c = await this.c()
    if (ttlMs === undefined) await c.set(key, value)
    else await c.set(key, value, 'PX', Math.max(1, Math.ceil(ttlMs)))
  }

  async getMany(keys: readonly string[]) {
    const c = await this.c()
    const pages = await Promise.all(
      chunks(keys, GET_MANY_PAGE).map((page) => c.send('MGET', page) as Promise<(string | null)[]>),
    )
    return pages.flat()
  }

  async setMany(entries: readonly (readonly [string, string])[], ttlMs?: number) {
    const c = await this.c()
    await Promise.all(
      setManyCalls(entries, ttlMs).map(([keys, args]) =>
        c.send('EVAL', [SET_MANY, String(keys.length), ...keys, ...args]),
      ),
    )
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

  async setIf(key: string, expected: string | null, value: string, ttlMs: number) {
    const px = String(Math.max(1, Math.ceil(ttlMs)))
    return Number(await (await this.c()).send('EVAL', [SET_IF, '1', key, expected ?? '', value, px])) === 1
  }

  async del(...keys: string[]) {
    if (keys.length) await (await this.c()).send('DEL', keys)
  }

  async incr(key: string, ttlMs: number, by = 1) {
    const r = await (await this.c()).send('EVAL', [
      INCR_WITH_TTL,
      '1',
      key,
      String(Math.max(1, Math.ceil(ttlMs))),
      String(by),
    ])
    return Number(r)
  }

  async expire(key: string, ttlMs: number) {
    await (await this.c()).send('PEXPIRE', [key, String(Math.max(1, Math.ceil(ttlMs)))])
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
