/**
 * Work this process refused because too much of it waits already: nothing was done, the client may retry
 * after `retryAfterS` (answered 503 SERVICE_UNAVAILABLE with Retry-After).
 */
export class Overloaded extends Error {
  override name = 'Overloaded'
  constructor(
    readonly what: string,
    readonly retryAfterS: number,
  ) {
    super(`${what} busy`)
  }
}

/**
 * CPU-heavy work of this process (a password hash) run at most `limit` at a time, the rest waiting in
 * order. An arrival whose wait would exceed `maxWaitMs` (the runs ahead of it, `limit` at a time, at the
 * mean duration of the recent ones) is refused at once: under a flood the work is shed while it is cheap
 * to refuse, instead of queueing without bound and taking the processors from every other request.
 * Waiters start in arrival order; one reaching the gate in the same turn a slot is freed may start first.
 */
export class WorkGate {
  private running = 0
  /** Arrivals waiting, in arrival order (their tickets). */
  private waiting: { ticket: number; wake: () => void }[] = []
  private tickets = 0
  /** Mean duration of a run, ms (moving average): measured where it runs, under its real contention. */
  private meanMs: number
  /** Arrivals refused so far. */
  readonly stats = { refused: 0 }

  constructor(
    readonly what: string,
    private limit: number,
    private maxWaitMs: number,
    expectedMs = 50,
  ) {
    this.meanMs = expectedMs
  }

  configure(limit: number, maxWaitMs: number) {
    this.limit = Math.max(1, limit)
    this.maxWaitMs = maxWaitMs
  }

  /** The wait of an arrival now (ms): 0 while a slot is free. */
  expectedWaitMs(): number {
    if (this.running < this.limit) return 0
    return Math.round(((this.waiting.length + 1) / this.limit) * this.meanMs)
  }

  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.running >= this.limit) {
      const wait = this.expectedWaitMs()
      if (wait > this.maxWaitMs) {
        this.stats.refused++
        throw new Overloaded(this.what, Math.max(1, Math.ceil(wait / 1000)))
      }
      const ticket = this.tickets++
      // a freed slot wakes every waiter and the earliest that goes on takes it; the others wait again in
      // their places. A slot is never handed to one waiter: in a Worker a waiter whose request ended is
      // woken but never goes on, and a slot handed to it would be held for the isolate's life
      do await this.park(ticket)
      while (this.running >= this.limit)
    }
    this.running++
    const started = performance.now()
    try {
      return await fn()
    } finally {
      this.meanMs = this.meanMs * 0.8 + (performance.now() - started) * 0.2
      this.running--
      const woken = this.waiting
      this.waiting = []
      for (const w of woken) w.wake()
    }
  }

  /** Waits until a slot is freed; the waiter keeps its place among the others by its ticket. */
  protected park(ticket: number): Promise<void> {
    return new Promise<void>((wake) => {
      let i = this.waiting.length
      while (i > 0 && this.waiting[i - 1].ticket > ticket) i--
      this.waiting.splice(i, 0, { ticket, wake })
    })
  }
}
