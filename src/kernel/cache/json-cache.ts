import type { KeyValueStore } from './store'

/**
 * Read-through JSON cache over the shared store. A hit returning the very same text as the last one
 * reuses the decoded value (no JSON.parse on the hot path); callers treat values as read-only.
 */
export class JsonCache {
  private readonly decoded = new Map<string, { raw: string; value: unknown }>()

  constructor(
    private readonly store: KeyValueStore,
    private readonly ttlMs: number,
  ) {}

  async get<T>(key: string, load: () => Promise<T | null>): Promise<T | null> {
    const hit = await this.store.get(key)
    if (hit) return this.decode<T>(key, hit)
    const value = await load()
    if (value === null) return null
    await this.store.set(key, JSON.stringify(value), this.ttlMs)
    return value
  }

  del(...keys: string[]) {
    for (const k of keys) this.decoded.delete(k)
    return this.store.del(...keys)
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
