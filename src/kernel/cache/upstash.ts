import { Redis } from '@upstash/redis'
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

/** Upstash Redis over its REST protocol, for the edge where TCP sockets are not the norm. */
export class UpstashStore implements KeyValueStore {
  readonly kind = 'upstash' as const
  private readonly client: Redis

  constructor(url: string, token: string) {
    this.client = new Redis({ url, token, automaticDeserialization: false, retry: false })
  }

  async get(key: string) {
    const v = await this.client.get<string>(key)
    return v ?? null
  }

  async set(key: string, value: string, ttlMs?: number) {
    if (ttlMs === undefined) await this.client.set(key, value)
    else await this.client.set(key, value, { px: Math.max(1, Math.ceil(ttlMs)) })
  }

  async getMany(keys: readonly string[]) {
    const pages = await Promise.all(
      chunks(keys, GET_MANY_PAGE).map((page) => this.client.mget<(string | null)[]>(...page)),
    )
    return pages.flat().map((v) => v ?? null)
  }

  async setMany(entries: readonly (readonly [string, string])[], ttlMs?: number) {
    await Promise.all(
      setManyCalls(entries, ttlMs).map(([keys, args]) => this.client.eval(SET_MANY, keys, args)),
    )
  }

  async setNX(key: string, value: string, ttlMs: number) {
    const r = await this.client.set(key, value, { px: Math.max(1, Math.ceil(ttlMs)), nx: true })
    return r === 'OK'
  }

  async setIf(key: string, expected: string | null, value: string, ttlMs: number) {
    const px = String(Math.max(1, Math.ceil(ttlMs)))
    return Number(await this.client.eval(SET_IF, [key], [expected ?? '', value, px])) === 1
  }

  async del(...keys: string[]) {
    if (keys.length) await this.client.del(...keys)
  }

  async incr(key: string, ttlMs: number, by = 1) {
    const r = await this.client.eval(
      INCR_WITH_TTL,
      [key],
      [String(Math.max(1, Math.ceil(ttlMs))), String(by)],
    )
    return Number(r)
  }

  async expire(key: string, ttlMs: number) {
    await this.client.pexpire(key, Math.max(1, Math.ceil(ttlMs)))
  }

  async lease(key: string, owner: string, ttlMs: number) {
    return leaseAnswer(
      Number(await this.client.eval(LEASE, [key], [owner, String(Math.max(1, Math.ceil(ttlMs)))])),
    )
  }

  async unlease(key: string, owner: string) {
    await this.client.eval(UNLEASE, [key], [owner])
  }

  async ping() {
    return (await this.client.ping()) === 'PONG'
  }

  async close() {}
}
