import type { Logger } from '../logger'
import { Dependency } from '../resilience'
import type { KeyValueStore, LeaseAnswer } from './store'

/**
 * Wraps a remote store so that an outage degrades callers instead of failing requests: reads miss,
 * writes are dropped, counters read as 0. Each call is bounded by `timeoutMs`, and once a call has
 * failed a circuit breaker answers the fallback at once until a probe succeeds (kernel/resilience), so
 * a request that touches the cache several times is not slowed by each of them while Redis is away.
 */
export class ResilientStore implements KeyValueStore {
  readonly dependency: Dependency

  constructor(
    private readonly inner: KeyValueStore,
    logger: Logger,
    timeoutMs = 250,
  ) {
    this.dependency = new Dependency('cache', timeoutMs, logger, async () => {
      if (!(await this.inner.ping())) throw new Error('no answer to PING')
    })
  }

  get kind() {
    return this.inner.kind
  }

  private guard<T>(run: () => Promise<T>, fallback: T): Promise<T> {
    return this.dependency.call(run).catch(() => fallback)
  }

  get(key: string) {
    return this.guard(() => this.inner.get(key), null)
  }
  set(key: string, value: string, ttlMs?: number) {
    return this.guard(() => this.inner.set(key, value, ttlMs), undefined)
  }
  getMany(keys: readonly string[]) {
    return this.guard(
      () => this.inner.getMany(keys),
      keys.map(() => null),
    )
  }
  setMany(entries: readonly (readonly [string, string])[], ttlMs?: number) {
    return this.guard(() => this.inner.setMany(entries, ttlMs), undefined)
  }
  /** When the store is down nobody can win a once-only race through it: false, unless the caller says. */
  setNX(key: string, value: string, ttlMs: number, whenDown = false) {
    return this.guard(() => this.inner.setNX(key, value, ttlMs), whenDown)
  }
  /** When the store is down nothing is cached: false. */
  setIf(key: string, expected: string | null, value: string, ttlMs: number) {
    return this.guard(() => this.inner.setIf(key, expected, value, ttlMs), false)
  }
  del(...keys: string[]) {
    return this.guard(() => this.inner.del(...keys), undefined)
  }
  incr(key: string, ttlMs: number, by?: number) {
    return this.guard(() => this.inner.incr(key, ttlMs, by), 0)
  }
  expire(key: string, ttlMs: number) {
    return this.guard(() => this.inner.expire(key, ttlMs), undefined)
  }
  /** When the store is down nobody can take or renew a lease through it; the holder learns it is cut off. */
  lease(key: string, owner: string, ttlMs: number) {
    return this.guard<LeaseAnswer>(() => this.inner.lease(key, owner, ttlMs), {
      held: false,
      freeInMs: ttlMs,
      unreachable: true,
    })
  }
  unlease(key: string, owner: string) {
    return this.guard(() => this.inner.unlease(key, owner), undefined)
  }
  /** While the circuit is open: false at once (a health check after the backoff is the probe). */
  ping() {
    return this.guard(() => this.inner.ping(), false)
  }
  close() {
    this.dependency.close()
    return this.inner.close()
  }
}
