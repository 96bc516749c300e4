import {
  BrokenCircuitError,
  CircuitState,
  ConsecutiveBreaker,
  circuitBreaker,
  ExponentialBackoff,
  handleAll,
  TaskCancelledError,
  TimeoutStrategy,
  timeout,
  wrap,
} from 'cockatiel'
import type { Logger } from './logger'

/** A call to a remote dependency that was not made (its circuit is open) or did not answer in time. */
export class DependencyDown extends Error {
  constructor(
    readonly dependency: string,
    reason: string,
  ) {
    super(`${dependency} unavailable: ${reason}`)
    this.name = 'DependencyDown'
  }
}

/**
 * The calls of one remote dependency (the cache, the bus): each bounded by `timeoutMs`; the first failure
 * opens a circuit breaker (cockatiel), so while the dependency is away calls fail at once instead of each
 * waiting for the timeout; after a backoff (250 ms doubling to 2 s) one probe goes through, and its
 * success closes the circuit. With a `probe` (a PING), requests never wait for the probe: they fail at
 * once while the probe runs beside them, and while the circuit is open the probe also runs on its own
 * (every PROBE_EVERY_MS), so the circuit closes once the dependency is back even when no call comes: the
 * first call after an outage finds it closed. Every caller decides what a failed call means (a miss, a 503).
 */
export class Dependency {
  private policy!: ReturnType<Dependency['makePolicy']>['policy']
  private breaker!: ReturnType<Dependency['makePolicy']>['breaker']
  private downSince: number | null = null
  private lastError: string | null = null
  private probing: Promise<unknown> | null = null
  /** When the running probe started (Date.now()). */
  private probingAt = 0
  /** A breaker replaced after a lost probe starts closed: not up until a probe through it answers. */
  private unproven = false

  private watching = false
  private shut = false

  constructor(
    readonly name: string,
    private readonly timeoutMs: number,
    private readonly logger: Logger,
    private readonly probe?: () => Promise<unknown>,
  ) {
    Object.assign(this, this.makePolicy())
  }

  private makePolicy() {
    const breaker = circuitBreaker(handleAll, {
      halfOpenAfter: new ExponentialBackoff({ initialDelay: 250, maxDelay: 2000 }),
      breaker: new ConsecutiveBreaker(1),
    })
    const policy = wrap(breaker, timeout(this.timeoutMs, TimeoutStrategy.Aggressive))
    // a replaced breaker's late events say nothing of the dependency now
    breaker.onBreak((reason) => {
      if (breaker !== this.breaker) return
      this.unproven = false
      this.downSince ??= Date.now()
      const err = 'error' in reason ? errText(reason.error) : 'isolated'
      this.lastError = err
      this.logger.log('warn', 'dependency down', { dependency: this.name, err })
      this.watch()
    })
    breaker.onReset(() => {
      if (breaker === this.breaker) this.back()
    })
    return { breaker, policy }
  }

  private back() {
    if (this.downSince !== null)
      this.logger.log('info', 'dependency back', {
        dependency: this.name,
        down_ms: Date.now() - this.downSince,
      })
    this.downSince = null
  }

  /**
   * Runs `fn` under the timeout and the breaker; throws DependencyDown when either refuses. While the
   * circuit is not closed and a `probe` is given, `fn` is not run: the probe runs in the background (one
   * at a time) and this call fails at once.
   */
  async call<T>(fn: () => Promise<T>): Promise<T> {
    if (this.up) return this.closed(fn)
    if (this.probe) {
      this.probeOnce()
      throw new DependencyDown(this.name, this.lastError ?? 'circuit open')
    }
    return this.run(fn)
  }

  /**
   * One probe through the breaker, unless one is running; its success closes the circuit. A probe that
   * has not settled well past its timeout was cut off with the request that started it (a Worker's
   * runtime cancels what a finished request left running, its timers too): the breaker it held half open
   * would refuse every call for the isolate's life, so it is replaced by a fresh one, and the probe runs
   * again.
   */
  private probeOnce() {
    const probe = this.probe
    if (!probe) return Promise.resolve()
    if (this.probing && Date.now() - this.probingAt > this.timeoutMs * 2 + PROBE_EVERY_MS) {
      this.probing = null
      Object.assign(this, this.makePolicy())
      this.unproven = true
    }
    if (!this.probing) {
      this.probingAt = Date.now()
      const mine: Promise<unknown> = this.run(probe)
        // through a replaced breaker (closed from the start) no reset says the dependency is back
        .then(() => {
          if (this.probing !== mine || this.breaker.state !== CircuitState.Closed) return
          this.unproven = false
          this.back()
        })
        .catch(() => {})
        .finally(() => {
          if (this.probing === mine) this.probing = null
        })
      this.probing = mine
    }
    return this.probing
  }

  /**
   * While the circuit is open, probes on a timer until it closes. Before the breaker's backoff has passed
   * a probe is refused without a call, so this asks at most as often as the breaker lets it. The timer
   * never keeps a process alive.
   */
  private watch() {
    if (!this.probe || this.watching) return
    this.watching = true
    const next = () => {
      if (this.up || this.shut) {
        this.watching = false
        return
      }
      const timer = setTimeout(() => void this.probeOnce().then(next), PROBE_EVERY_MS) as {
        unref?: () => void
      }
      timer.unref?.()
    }
    next()
  }

  /**
   * A call while the circuit is closed (nearly every call): bounded by a timer of its own rather than
   * cockatiel's timeout policy, whose AbortController, listeners and abort per call were ~12 % of an API
   * instance's JS time in the scale-out soak. A failure or a timeout goes to the breaker (`fail`), which
   * opens as it did; every later call takes cockatiel's path until a probe closes it again.
   */
  private closed<T>(fn: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      let settled = false
      const timer = setTimeout(() => {
        if (settled) return
        settled = true
        this.fail(new Error('timed out'))
        reject(new DependencyDown(this.name, 'timed out'))
      }, this.timeoutMs)
      let pending: Promise<T>
      try {
        pending = fn()
      } catch (e) {
        pending = Promise.reject(e)
      }
      pending.then(
        (v) => {
          if (settled) return
          settled = true
          clearTimeout(timer)
          resolve(v)
        },
        (e: unknown) => {
          if (settled) return
          settled = true
          clearTimeout(timer)
          this.fail(e)
          reject(new DependencyDown(this.name, errText(e)))
        },
      )
    })
  }

  private async run<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await this.policy.execute(() => fn())
    } catch (e) {
      if (e instanceof BrokenCircuitError)
        throw new DependencyDown(this.name, this.lastError ?? 'circuit open')
      if (e instanceof TaskCancelledError) throw new DependencyDown(this.name, 'timed out')
      throw new DependencyDown(this.name, errText(e))
    }
  }

  /** Its client is closed: no more probes on their own. */
  close() {
    this.shut = true
  }

  get up() {
    return !this.unproven && this.breaker.state === CircuitState.Closed
  }

  /** Records a failure seen outside `call` (a blocking reader's error), so the state tells the truth. */
  fail(err: unknown) {
    this.lastError = errText(err)
    if (this.breaker.state === CircuitState.Closed)
      void this.breaker.execute(() => Promise.reject(err)).catch(() => {})
  }
}

/** How often an open circuit is probed without calls (the breaker's own backoff is 250 ms to 2 s). */
const PROBE_EVERY_MS = 500

/**
 * A failure's text for a log line and a DependencyDown: @upstash/redis ends its HTTP errors with the whole
 * command (`, command was: [...]`: with auto-pipelining every key and value sent together, cached
 * customer records among them), which stays out, as does anything past 300 characters.
 */
export function errText(e: unknown) {
  const text = e instanceof Error ? e.message : String(e)
  const command = text.indexOf(', command was:')
  return (command >= 0 ? text.slice(0, command) : text).slice(0, 300)
}

/** Delays of a loop that retries for ever: 100 ms doubling to `maxMs`, with jitter so instances spread. */
export function backoff(attempt: number, maxMs = 5000) {
  const base = Math.min(maxMs, 100 * 2 ** Math.min(attempt, 16))
  return Math.round(base / 2 + (Math.random() * base) / 2)
}
