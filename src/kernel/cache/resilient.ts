import type { Logger } from '../logger'
import type { KeyValueStore, LeaseAnswer } from './store'

/**
 * Wraps a remote store so that an outage degrades callers instead of failing requests: reads miss,
 * writes are dropped, counters read as 0, and a slow store is cut off after `timeoutMs`.
 * Errors are logged at most once per `logEveryMs` so an outage does not flood the log.
 */
export class ResilientStore implements KeyValueStore {
  private lastLog = 0

  constructor(
    private readonly inner: KeyValueStore,
    private readonly logger: Logger,
    private readonly timeoutMs = 250,
    private readonly logEveryMs = 5000,
  ) {}

  get kind() {
    return this.inner.kind
  }

  private async guard<T>(op: string, run: () => Promise<T>, fallback: T): Promise<T> {
    let timer: ReturnType<typeof setTimeout> | undefined
    try {
      return await Promise.race([
        run(),
        new Promise<never>((_, reject) => {
          timer = setTimeout(
            () => reject(new Error(`cache ${op} timed out after ${this.timeoutMs} ms`)),
            this.timeoutMs,
          )
        }),
      ])
    } catch (err) {
      const now = Date.now()
      if (now - this.lastLog >= this.logEveryMs) {
        this.lastLog = now
        this.logger.log('warn', 'cache unavailable; degrading', {
          op,
          store: this.inner.kind,
          err: String(err),
        })
      }
      return fallback
    } finally {
      clearTimeout(timer)
    }
  }

  get(key: string) {
    return this.guard('get', () => this.inner.get(key), null)
  }
  set(key: string, value: string, ttlMs?: number) {
    return this.guard('set', () => this.inner.set(key, value, ttlMs), undefined)
  }
  /** When the store is down nobody can win a once-only race through it: answer false. */
  setNX(key: string, value: string, ttlMs: number) {
    return this.guard('setNX', () => this.inner.setNX(key, value, ttlMs), false)
  }
  del(...keys: string[]) {
    return this.guard('del', () => this.inner.del(...keys), undefined)
  }
  incr(key: string, ttlMs: number) {
    return this.guard('incr', () => this.inner.incr(key, ttlMs), 0)
  }
  /** When the store is down nobody can take a lease through it. */
  lease(key: string, owner: string, ttlMs: number) {
    return this.guard<LeaseAnswer>('lease', () => this.inner.lease(key, owner, ttlMs), {
      held: false,
      freeInMs: ttlMs,
    })
  }
  unlease(key: string, owner: string) {
    return this.guard('unlease', () => this.inner.unlease(key, owner), undefined)
  }
  ping() {
    return this.guard('ping', () => this.inner.ping(), false)
  }
  close() {
    return this.inner.close()
  }
}
