import type { KeyValueStore } from './store'

/** The mark an invalidation leaves (a cached value is JSON, which never starts with NUL). */
const GONE = '\u0000gone:'

/**
 * Read-through JSON cache over the shared store. A hit returning the very same text as the last one
 * reuses the decoded value (no JSON.parse on the hot path); callers treat values as read-only.
 *
 * An invalidation does not delete a key: it leaves a mark of its own, and a fill writes what it loaded
 * only while the key still holds what the fill read before loading (`setIf`). A read that loaded the row
 * before a write committed, and reaches the store after the write's invalidation (a password change
 * ending sessions, an account disabled), so finds another value there and caches nothing, where a delete
 * let it cache the old row until the TTL.
 */
export class JsonCache {
  private readonly decoded = new Map<string, { raw: string; value: unknown }>()

  constructor(
    private readonly store: KeyValueStore,
    private readonly ttlMs: number,
  ) {}

  async get<T>(key: string, load: () => Promise<T | null>): Promise<T | null> {
    const hit = await this.store.get(key)
    if (hit && !hit.startsWith(GONE)) return this.decode<T>(key, hit)
    const value = await load()
    if (value === null) return null
    await this.store.setIf(key, hit, JSON.stringify(value), this.ttlMs)
    return value
  }

  /** Marks the keys gone for one TTL: a fill that read them before now caches nothing. */
  del(...keys: string[]) {
    for (const k of keys) this.decoded.delete(k)
    if (keys.length === 0) return Promise.resolve()
    const mark = GONE + crypto.randomUUID()
    return this.store.setMany(
      keys.map((k) => [k, mark] as const),
      this.ttlMs,
    )
  }

  private decode<T>(key: string, raw: string): T {
    const memo = this.decoded.get(key)
    if (memo && memo.raw === raw) return memo.value as T
    const value = JSON.parse(raw) as T
    if (this.decoded.size >= 10_000) this.decoded.clear()
    this.decoded.set(key, { raw, value })
    return value
  }
}
