import type { Db, Tx } from './client'
import { DatabaseBusy, isBusy, isUnreachable } from './errors'
import { isPastDeadline } from './group-writer'

/** Writes one request in a transaction, alone or together with others (the port of ADR 0001). */
export interface Committer<In, Out> {
  submit(input: In): Promise<Out>
}

interface CommitHooks<Out> {
  /** Runs once per committed batch before the requests resolve (cache invalidation, in-memory books). */
  afterCommit?: (outputs: Out[]) => Promise<void>
  /** A failed afterCommit does not fail requests whose writes are committed; it is reported here. */
  onAfterCommitError?: (e: unknown) => void
}

/**
 * One transaction per request, no batching: where a request must not wait on another one's work (the
 * edge: every request of a Worker does its own), and where throughput does not matter.
 */
export class PerRequestCommit<In, Out> implements Committer<In, Out> {
  constructor(
    private readonly db: Db,
    private readonly handler: (tx: Tx, inputs: In[]) => Promise<(Out | Error)[]>,
    private readonly opts: CommitHooks<Out> = {},
  ) {}

  async submit(input: In): Promise<Out> {
    const [result] = await this.db.transaction((tx) => this.handler(tx, [input]))
    if (result instanceof Error) throw result
    try {
      await this.opts.afterCommit?.([result])
    } catch (e) {
      this.opts.onAfterCommitError?.(e)
    }
    return result
  }
}

interface Waiting<In, Out> {
  input: In
  resolve: (v: Out) => void
  reject: (e: unknown) => void
  /** When it was submitted (performance.now()): its deadline is `waitMs` later. */
  at: number
  /** Answered DatabaseBusy while its batch waited for its transaction: the handler never sees it. */
  expired: boolean
}

/**
 * Group commit: requests that arrive while a write transaction runs are handled together in the next
 * one, so a burst of N writes costs one BEGIN/COMMIT and a few set-based statements instead of N of
 * each (the way matching engines and databases batch their journal writes). Idle, a request waits one
 * event-loop turn at most. The handler answers every input with a value or an Error of its own; if it
 * throws, the transaction rolls back and every request of the batch fails with that error.
 *
 * A request waits at most `waitMs` (DATABASE_WRITE_TIMEOUT_MS) for its transaction to start, wherever it
 * waits: behind a batch that is being written (whose database may not answer for its own bound) or in a
 * batch that waits for the write lock. Past it, it is answered DatabaseBusy (503, nothing written) and its
 * batch's handler never sees it; once the handler has it, only the transaction's outcome answers it (a
 * member already being written may still commit, ADR 0019). Its statements get what is left of the bound
 * of the oldest request it holds (WriteOrder.deadline): a turn that came just before that request's
 * deadline is not held for a whole round trip's bound more on a database that does not answer (past it a
 * statement is not sent, or is given up and the transaction rolled back: 503, nothing written); only its
 * COMMIT, which may commit once sent, keeps its own bound. One timer per committer, for the oldest
 * request, not one per request. A batch the database did not answer (busy, unreachable; not one
 * past its oldest request's deadline on a database that answers, PastDeadline) fails the requests queued
 * behind it at once with the same error: they waited behind a database that does not
 * answer, and a batch of theirs would wait out the whole bound again (a request in flight is bounded by
 * the write path's own timeouts, from when its transaction started).
 */
export class GroupCommit<In, Out> implements Committer<In, Out> {
  private queue: Waiting<In, Out>[] = []
  private scheduled = false
  private running = false
  /** Queue length at the last turn and the time the collection started (linger). */
  private seen = 0
  private firstAt = 0
  /** The collection holds only requests left over from the last batch; no new one has come in yet. */
  private leftover = false
  /** The batch drained whose handler has not started yet (its transaction waits for its turn). */
  private forming: Waiting<In, Out>[] | null = null
  /** Some member of `forming` was answered DatabaseBusy. */
  private formingExpired = false
  /** Fires at (or before) the deadline of the oldest request not yet handed to the handler. */
  private timer: ReturnType<typeof setTimeout> | undefined
  private readonly waitMs: number

  constructor(
    private readonly db: Db,
    private readonly handler: (tx: Tx, inputs: In[]) => Promise<(Out | Error)[]>,
    private readonly opts: {
      /** Runs once per committed batch before the requests resolve (cache invalidation, in-memory books). */
      afterCommit?: (outputs: Out[]) => Promise<void>
      /** A failed afterCommit does not fail requests whose writes are committed; it is reported here. */
      onAfterCommitError?: (e: unknown) => void
      maxBatch?: number
      /**
       * Under load, keep collecting while every loop turn brings new requests, for at most this long
       * (ms) after the collection started (the first request, or the end of the last batch). A
       * closed-loop client (a terminal, a bridge, a load test) sends its next request when the previous
       * answer arrives; without this, the answers of one batch come back while the next commits and the
       * traffic splits into two alternating half-size batches, each paying the fixed cost of a
       * transaction. Idle, a lone request does not wait: the next turn brings nothing new and the batch
       * commits.
       */
      lingerMs?: number
      /**
       * How long a request may wait for its transaction to start (ms): DATABASE_WRITE_TIMEOUT_MS, after
       * which the write path answers 503 (docs/operations.md, ADR 0019). Default 8,000.
       */
      waitMs?: number
    } = {},
  ) {
    this.waitMs = opts.waitMs ?? 8000
  }

  submit(input: In): Promise<Out> {
    return new Promise<Out>((resolve, reject) => {
      this.queue.push({ input, resolve, reject, at: performance.now(), expired: false })
      // a timer is armed already (for an older request, whose deadline comes first) or this one's is
      if (this.timer === undefined) this.arm()
      if (!this.scheduled && !this.running) this.collect()
    })
  }

  /** The oldest request not yet handed to the handler: in the forming batch, else first in the queue. */
  private oldest(): Waiting<In, Out> | undefined {
    if (this.forming) for (const w of this.forming) if (!w.expired) return w
    return this.queue[0]
  }

  private arm() {
    const w = this.oldest()
    if (!w) return
    this.timer = setTimeout(this.expire, Math.max(0, w.at + this.waitMs - performance.now()))
    // it keeps no process alive (what a request waits on does)
    ;(this.timer as { unref?: () => void }).unref?.()
  }

  /**
   * Answers DatabaseBusy to every request past its deadline that no handler has yet: nothing of it was
   * written, and none will be (the forming batch's handler skips it). Requests are in arrival order.
   */
  private readonly expire = () => {
    this.timer = undefined
    const due = performance.now() - this.waitMs
    const busy = () => new DatabaseBusy(`waited over ${this.waitMs} ms for the write lock`)
    if (this.forming)
      for (const w of this.forming)
        if (!w.expired && w.at <= due) {
          w.expired = true
          this.formingExpired = true
          w.reject(busy())
        }
    let n = 0
    while (n < this.queue.length && this.queue[n]!.at <= due) n++
    if (n > 0) for (const w of this.queue.splice(0, n)) w.reject(busy())
    this.arm()
  }

  private collect(leftover = false) {
    this.scheduled = true
    this.leftover = leftover
    this.seen = this.queue.length
    this.firstAt = performance.now()
    // One turn of the loop lets the requests parsed in the same poll join the batch.
    setImmediate(this.turn)
  }

  private readonly turn = () => {
    const linger = this.opts.lingerMs ?? 0
    const grew = this.queue.length > this.seen
    // Leftovers wait (within the linger) for the first new arrival: the answers of the batch just
    // committed are still on their way to the clients, whose next requests make up the next batch.
    if ((grew || this.leftover) && performance.now() - this.firstAt < linger) {
      if (grew) this.leftover = false
      this.seen = this.queue.length
      setImmediate(this.turn)
      return
    }
    void this.drain()
  }

  private async drain() {
    this.scheduled = false
    this.running = true
    const batch = this.queue.splice(0, this.opts.maxBatch ?? 500)
    let down: unknown
    try {
      down = await this.commit(batch)
    } finally {
      this.running = false
      // the database did not answer this batch (busy, unreachable, a round trip past its bound): those
      // that waited behind it are told so now, nothing of theirs written, as the write queue tells its own
      // waiters (group-writer.ts); put in a batch, they would wait out the whole bound once more
      if (down !== undefined) for (const w of this.queue.splice(0)) w.reject(down)
      // Requests that came in while a batch of several committed (their checks ran between its
      // statements) start the next collection rather than committing at once: committed at once, the
      // one or two of them made every other transaction a batch of one under load (1,117 of 2,460
      // batches in a 12 s run at 50 connections), a whole transaction's cost for requests the next batch
      // takes anyway. After a batch of one (light traffic) they commit without lingering.
      if (this.queue.length > 0) this.collect(batch.length > 1)
    }
  }

  /** Commits a batch; answers the error when the database did not answer it (busy or unreachable). */
  private async commit(all: Waiting<In, Out>[]): Promise<unknown> {
    let results: (Out | Error)[]
    let batch = all
    this.forming = all
    this.formingExpired = false
    // asked when the turn comes: those past their deadline by then are answered first (the timer may
    // not have fired yet), and the oldest left sets the transaction's deadline
    const deadline = () => {
      clearTimeout(this.timer)
      this.expire()
      for (const b of all) if (!b.expired) return b.at + this.waitMs
      return Number.POSITIVE_INFINITY
    }
    try {
      results = await this.db.transaction(
        (tx) => {
          // the transaction's turn came: the members answered 503 meanwhile are left out, the others are
          // now the transaction's (only its outcome answers them)
          this.forming = null
          if (this.formingExpired) batch = all.filter((b) => !b.expired)
          if (batch.length === 0) return Promise.resolve([])
          return this.handler(
            tx,
            batch.map((b) => b.input),
          )
        },
        { deadline },
      )
    } catch (e) {
      // failed before its turn came (busy, unreachable) or with the transaction: no member was written.
      // Past its oldest request's deadline on a database that answers (PastDeadline): those behind it
      // are not told, they have their own bounds
      for (const b of batch) b.reject(e)
      return (isBusy(e) || isUnreachable(e)) && !isPastDeadline(e) ? e : undefined
    } finally {
      this.forming = null
    }
    if (batch.length === 0) return
    try {
      await this.opts.afterCommit?.(results.filter((r): r is Out => !(r instanceof Error)))
    } catch (e) {
      this.opts.onAfterCommitError?.(e)
    }
    batch.forEach((b, i) => {
      const r = results[i]
      if (r instanceof Error) b.reject(r)
      else b.resolve(r)
    })
  }
}
