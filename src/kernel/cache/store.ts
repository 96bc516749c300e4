import type { Dependency } from '../resilience'

/**
 * The cache port. Every shared, short-lived fact (revoked token ids, sign-in failure counters, hot read
 * models, latest quotes) lives behind it, so several app instances share it when it is Redis/Upstash.
 * Values are strings; callers serialize.
 */
export interface KeyValueStore {
  readonly kind: 'memory' | 'redis' | 'upstash'
  /** A remote store's reachability (ResilientStore); absent for the in-process store. */
  readonly dependency?: Dependency
  get(key: string): Promise<string | null>
  /** ttlMs omitted = no expiry. */
  set(key: string, value: string, ttlMs?: number): Promise<void>
  /**
   * Many keys at once, in their order (null where absent): a round trip per 1,000 keys on a remote store
   * (over Upstash's REST a get per key is an HTTP request, a Worker's subrequest, each).
   */
  getMany(keys: readonly string[]): Promise<(string | null)[]>
  /**
   * Many keys at once with one expiry (omitted = none): one round trip on a remote store, where a set per
   * key was one each (over Upstash's REST, an HTTP request each: a Worker's pass over thousands of prop
   * phases would have spent its subrequests on them).
   */
  setMany(entries: readonly (readonly [string, string])[], ttlMs?: number): Promise<void>
  /**
   * Sets only when absent; true when this call set it (the building block of once-only work). `whenDown`
   * is the answer of a store that cannot ask (the resilient wrapper with its remote store away): false by
   * default, as nobody can win a once-only race then; true where counting twice beats losing one (a
   * unique click).
   */
  setNX(key: string, value: string, ttlMs: number, whenDown?: boolean): Promise<boolean>
  /**
   * Sets the key only while it still holds `expected` (null: while it is absent); true when it did. A
   * read-through fill writes what it loaded only if no invalidation came between its read and its write.
   */
  setIf(key: string, expected: string | null, value: string, ttlMs: number): Promise<boolean>
  del(...keys: string[]): Promise<void>
  /**
   * Atomic increment by `by` (1; -1 gives a count back), never below 0 (a count given back after its key
   * was cleared or expired); the expiry starts with the first increment of a key.
   */
  incr(key: string, ttlMs: number, by?: number): Promise<number>
  /** Sets a live key's expiry to `ttlMs` from now, leaving its value (a lock renewed by a new failure). */
  expire(key: string, ttlMs: number): Promise<void>
  /**
   * Takes the lease `key` for `owner` for `ttlMs` when nobody holds it, or renews it when `owner` does
   * (atomically: `SET NX PX`, else compare and `PEXPIRE`). When another owner holds it, says how long
   * that lease has left, so a waiting instance can try again the moment it lapses.
   */
  lease(key: string, owner: string, ttlMs: number): Promise<LeaseAnswer>
  /** Gives the lease up, if `owner` still holds it. */
  unlease(key: string, owner: string): Promise<void>
  ping(): Promise<boolean>
  close(): Promise<void>
}

/** `unreachable`: the store did not answer, so the caller cannot know who holds it (nor renew its own). */
export type LeaseAnswer = { held: true } | { held: false; freeInMs: number; unreachable?: true }

/** Reads the LEASE script's answer: -1 held, else the other holder's PTTL (negative when just lapsed). */
export const leaseAnswer = (n: number): LeaseAnswer =>
  n === -1 ? { held: true } : { held: false, freeInMs: Math.max(0, n) }

/**
 * Lua shared by the Redis and Upstash adapters: SET with PX while the key holds ARGV[1] ('' while it is
 * absent; a cached value is never empty), 1 when set.
 */
export const SET_IF =
  "local cur = redis.call('GET', KEYS[1]) if cur == false then cur = '' end " +
  "if cur == ARGV[1] then redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3]) return 1 end return 0"

/** Lua script shared by the Redis and Upstash adapters: INCR with an expiry set on creation. */
export const INCR_WITH_TTL =
  "local n = redis.call('INCRBY', KEYS[1], ARGV[2]) " +
  "if n < 0 then n = 0 redis.call('SET', KEYS[1], 0, 'KEEPTTL') end " +
  "if redis.call('PTTL', KEYS[1]) < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end return n"

/**
 * Lua shared by the Redis and Upstash adapters: take the lease, or renew it for its holder (-1); else the
 * milliseconds left on the other holder's lease.
 */
export const LEASE =
  "if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return -1 end " +
  "if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('PEXPIRE', KEYS[1], ARGV[2]) return -1 end " +
  "return redis.call('PTTL', KEYS[1])"
/**
 * Lua shared by the Redis and Upstash adapters: SET of every key to its value (ARGV in the order of KEYS),
 * with the expiry in the last ARGV (0: none).
 */
export const SET_MANY =
  'local px = tonumber(ARGV[#ARGV]) for i = 1, #KEYS do ' +
  "if px > 0 then redis.call('SET', KEYS[i], ARGV[i], 'PX', px) else redis.call('SET', KEYS[i], ARGV[i]) end " +
  'end return #KEYS'

/** Keys per SET_MANY call: a bounded script call, however many entries the caller has. */
const SET_MANY_KEYS = 500

/** The SET_MANY calls for these entries: [keys, args (values, then the expiry)] each. */
export function setManyCalls(entries: readonly (readonly [string, string])[], ttlMs?: number) {
  const px = ttlMs === undefined ? '0' : String(Math.max(1, Math.ceil(ttlMs)))
  const calls: [string[], string[]][] = []
  for (let i = 0; i < entries.length; i += SET_MANY_KEYS) {
    const part = entries.slice(i, i + SET_MANY_KEYS)
    calls.push([part.map((e) => e[0]), [...part.map((e) => e[1]), px]])
  }
  return calls
}

/** Keys per MGET of getMany: a bounded call, however many keys the caller has. */
export const GET_MANY_PAGE = 1000

/** The keys in pages of `size` (getMany's MGETs). */
export function chunks<T>(keys: readonly T[], size: number): T[][] {
  const out: T[][] = []
  for (let i = 0; i < keys.length; i += size) out.push(keys.slice(i, i + size))
  return out
}

export const UNLEASE = "if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end return 0"
