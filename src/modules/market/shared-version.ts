import type { KeyValueStore } from '../../kernel/cache'

const YEAR_MS = 365 * 86_400_000
/** How often a bump the shared cache did not take is sent again (besides on every read). */
const RETRY_MS = 1000

/**
 * A fresh version: the time in ms and six random digits, an integer (19 digits, below 2^63) so `INCR` by
 * hand still makes a new one. Never an earlier version again: a counter restarted from nothing by a Redis
 * restart (or an evicted key) counted up to a version instances still held, and they kept what they had.
 */
export const newVersion = () => `${Date.now()}${String(Math.floor(Math.random() * 1e6)).padStart(6, '0')}`

/**
 * A version in the shared cache that readers compare with the one they hold (reference data, watch lists).
 * A bump is a new value, never a count. The ResilientStore drops a write while Redis does not answer: a
 * bump that was not taken is sent again on the next read and every second (not at the edge, where timers
 * die with the request) until it is, so other instances learn within a second of Redis answering again.
 * That retry lives in this instance's memory: at the edge it is sent only if the same isolate reads again,
 * and a restart loses it. Readers therefore bound what they hold by age as well (reference data reloads
 * every 30 s, a cached watch list lives a minute).
 */
export class SharedVersion {
  /** A bump the store did not take, sent again until it does. */
  private unsent = false
  private retrying = false

  constructor(
    private readonly store: KeyValueStore,
    private readonly key: string,
    private readonly edge = false,
  ) {}

  /** Whether the last call reached the store (a remote store's circuit is open after a failed call). */
  private reached() {
    return this.store.dependency?.up !== false
  }

  /** Writes a new version; false when the store did not take it (sent again later). */
  async bump(): Promise<boolean> {
    await this.store.set(this.key, newVersion(), YEAR_MS)
    this.unsent = !this.reached()
    if (this.unsent) this.retryLater()
    return !this.unsent
  }

  private retryLater() {
    if (this.edge || this.retrying) return
    this.retrying = true
    const timer = setTimeout(() => {
      this.retrying = false
      if (this.unsent) void this.bump()
    }, RETRY_MS) as { unref?: () => void }
    timer.unref?.()
  }

  /**
   * The current version, or null when the store did not answer (the caller treats it as unknown). An
   * absent key (a Redis restarted empty, an evicted key) gets a new version: every instance then differs
   * from the one it holds and reloads once.
   */
  async read(): Promise<string | null> {
    if (this.unsent) await this.bump()
    const v = await this.store.get(this.key)
    if (v !== null) return v
    if (!this.reached()) return null
    const mine = newVersion()
    if (await this.store.setNX(this.key, mine, YEAR_MS)) return mine
    return this.store.get(this.key)
  }
}
