/**
 * The cache port. Every shared, short-lived fact (revoked token ids, sign-in failure counters, hot read
 * models, latest quotes) lives behind it, so several app instances share it when it is Redis/Upstash.
 * Values are strings; callers serialize.
 */
export interface KeyValueStore {
  readonly kind: 'memory' | 'redis' | 'upstash'
  get(key: string): Promise<string | null>
  /** ttlMs omitted = no expiry. */
  set(key: string, value: string, ttlMs?: number): Promise<void>
  /** Sets only when absent; true when this call set it (the building block of once-only work). */
  setNX(key: string, value: string, ttlMs: number): Promise<boolean>
  del(...keys: string[]): Promise<void>
  /** Atomic increment; the expiry starts with the first increment of a key. */
  incr(key: string, ttlMs: number): Promise<number>
  ping(): Promise<boolean>
  close(): Promise<void>
}

/** Lua script shared by the Redis and Upstash adapters: INCR with an expiry set on creation. */
export const INCR_WITH_TTL =
  "local n = redis.call('INCR', KEYS[1]) if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end return n"
