import { type InStatement, LibsqlError, type ResultSet } from '@libsql/client'
import type * as hrana from '@libsql/hrana-client'
import { DatabaseBusy, isBusy } from '../errors'
import { runSteps, type StepOutcome } from './hrana'

export interface WriterOptions {
  /** Transactions committed together at most (each under a savepoint of its own). */
  maxBatch?: number
  /** A batch takes no further transaction once it has held the write lock this long (ms). */
  batchBudgetMs?: number
  /** A transaction whose turn came and that has not settled after this long is rolled back (ms). */
  txTimeoutMs?: number
  /** A transaction that waited this long for its turn is refused as busy (ms). */
  queueTimeoutMs?: number
  /** A round trip to the database that has not answered after this long fails the batch (ms). */
  statementTimeoutMs?: number
}

/** What the write path of this process is doing, for /health/ready. */
export interface WriteQueueState {
  /** Transactions waiting for their turn. */
  waiting: number
  /** How long the oldest of them has waited (ms). */
  oldestWaitMs: number
  /** How long the batch in progress has held its transaction open (ms; 0 when none runs). */
  batchAgeMs: number
  batches: number
  transactions: number
}

const rolledBack = () =>
  new LibsqlError('the transaction was rolled back by the database', 'TRANSACTION_CLOSED')

/**
 * The database transaction of one batch, on the writer's stream: BEGIN IMMEDIATE rides with the first
 * statement, savepoint bookkeeping with the next statement of whoever comes next, COMMIT at the end.
 */
class Batch {
  /** Savepoint bookkeeping and deferred writes, sent with the next round trip. */
  pending: InStatement[] = []
  broken: unknown = null
  begun = false
  private chain: Promise<unknown> = Promise.resolve()

  constructor(
    public stream: hrana.Stream,
    private readonly reopen: () => Promise<hrana.Stream>,
    private readonly timeoutMs: number,
  ) {}

  /** Statements of a member, one round trip with whatever bookkeeping is pending; in call order. */
  run(stmts: InStatement[]): Promise<ResultSet[]> {
    const next = this.chain.then(() => this.runNow(stmts))
    this.chain = next.catch(() => {})
    return next
  }

  private async runNow(stmts: InStatement[]): Promise<ResultSet[]> {
    for (let attempt = 0; ; attempt++) {
      if (this.broken) throw this.broken
      const head = this.begun ? [] : ['BEGIN IMMEDIATE']
      const pre = this.pending
      let out: StepOutcome[]
      try {
        out = await this.timed(runSteps(this.stream, [...head, ...pre, ...stmts], head.length))
      } catch (e) {
        // nothing began: a stream the database forgot (an idle HTTP stream expires) is replaced once
        if (!this.begun && attempt === 0) {
          this.stream.close()
          try {
            this.stream = await this.reopen()
          } catch (e2) {
            this.broken = e2
            throw e2
          }
          continue
        }
        this.broken = e
        throw e
      }
      if (head.length) {
        const b = out[0]!
        if (!('ok' in b)) {
          const e = 'error' in b ? b.error : rolledBack()
          // a busy database refuses BEGIN before anything happened (sqld does while a checkpoint
          // restarts its WAL): asked again shortly
          if (attempt < 6 && isBusy(e)) {
            await new Promise((r) => setTimeout(r, 5 * 2 ** attempt))
            continue
          }
          this.broken = e
          throw e
        }
        this.begun = true
      }
      this.pending = []
      for (let i = head.length; i < head.length + pre.length; i++) {
        const o = out[i]!
        if (!('ok' in o)) {
          this.broken = 'error' in o ? o.error : rolledBack()
          throw this.broken
        }
      }
      const results: ResultSet[] = []
      for (let i = 0; i < stmts.length; i++) {
        const o = out[head.length + pre.length + i]!
        if ('ok' in o) results.push(o.ok)
        else if ('error' in o) throw Object.assign(o.error as object, { statementIndex: i })
        else {
          this.broken = rolledBack()
          throw this.broken
        }
      }
      return results
    }
  }

  async commit() {
    await this.chain
    if (this.broken) throw this.broken
    // members that only deferred their writes: BEGIN goes with them now
    if (!this.begun && this.pending.length > 0) await this.run([])
    if (!this.begun) return
    const out = await this.timed(runSteps(this.stream, [...this.pending, 'COMMIT']))
    this.pending = []
    const bad = out.find((o) => !('ok' in o))
    if (bad) {
      this.broken = 'error' in bad ? bad.error : rolledBack()
      throw this.broken
    }
  }

  async rollback() {
    await this.chain
    if (!this.begun || this.broken) return
    await this.timed(runSteps(this.stream, ['ROLLBACK'])).catch((e: unknown) => {
      this.broken = e
    })
  }

  private timed<T>(p: Promise<T>): Promise<T> {
    let timer: ReturnType<typeof setTimeout> | undefined
    return Promise.race([
      p,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          const e = new DatabaseBusy(`no answer from the database in ${this.timeoutMs} ms`)
          this.broken = e
          reject(e)
        }, this.timeoutMs)
      }),
    ]).finally(() => clearTimeout(timer))
  }
}

const TIMED_OUT = 'the transaction held its turn too long and was rolled back'

/**
 * One member of a batch: what `transaction()` hands its caller. Its statements run under its own
 * savepoint; `commit` resolves once the whole batch has committed, `rollback` undoes only its own work.
 */
class GroupTx {
  private materialized = false
  private state: 'open' | 'commit' | 'rollback' = 'open'
  private timedOut = false
  private settle!: (outcome: 'commit' | 'rollback') => void
  readonly settled = new Promise<'commit' | 'rollback'>((r) => {
    this.settle = r
  })
  private done!: () => void
  private failed!: (e: unknown) => void
  private readonly committed = new Promise<void>((resolve, reject) => {
    this.done = resolve
    this.failed = reject
  })
  private readonly timer: ReturnType<typeof setTimeout>

  constructor(
    private readonly group: Batch,
    private readonly name: string,
    timeoutMs: number,
  ) {
    this.committed.catch(() => {})
    // a member that neither commits nor rolls back holds every member after it: it loses its turn
    this.timer = setTimeout(() => {
      if (this.state !== 'open') return
      this.timedOut = true
      void this.rollback()
    }, timeoutMs)
  }

  get closed() {
    return this.state !== 'open'
  }

  /** It ran a statement (else committing it committed nothing). */
  get wrote() {
    return this.materialized
  }

  async execute(s: InStatement): Promise<ResultSet> {
    return (await this.batch([s]))[0]!
  }

  async batch(stmts: InStatement[]): Promise<ResultSet[]> {
    if (this.state !== 'open')
      throw this.timedOut ? new DatabaseBusy(TIMED_OUT) : new Error('the transaction is closed')
    if (!this.materialized) {
      this.group.pending.push(`SAVEPOINT ${this.name}`)
      this.materialized = true
    }
    return this.group.run(stmts)
  }

  async executeMultiple(sql: string) {
    for (const s of sql.split(';').filter((x) => x.trim())) await this.execute(s)
  }

  /** A statement whose answer nobody reads, sent with the next round trip of the batch (Tx.deferred). */
  defer(sql: string, args: (string | number | null)[] = []) {
    if (this.state !== 'open') throw new Error('the transaction is closed')
    if (!this.materialized) {
      this.group.pending.push(`SAVEPOINT ${this.name}`)
      this.materialized = true
    }
    this.group.pending.push({ sql, args })
  }

  commit(): Promise<void> {
    if (this.state === 'open') {
      this.state = 'commit'
      clearTimeout(this.timer)
      this.settle('commit')
    } else if (this.timedOut) return Promise.reject(new DatabaseBusy(TIMED_OUT))
    return this.committed
  }

  /**
   * Undoes its own work and resolves once the batch is over: a member that failed on a conflict with an
   * earlier member (a unique key both inserted) reads what that one wrote as soon as it is told, as if
   * the two had run one after the other.
   */
  rollback(): Promise<void> {
    if (this.state === 'open') {
      this.state = 'rollback'
      clearTimeout(this.timer)
      // its savepoint stays on the stack, emptied: the batch's COMMIT releases it with the others
      if (this.materialized) this.group.pending.push(`ROLLBACK TO ${this.name}`)
      this.settle('rollback')
    }
    return this.committed.catch(() => {})
  }

  close() {
    void this.rollback()
  }

  /** The batch committed, or failed: what `commit` answers. */
  finish(e?: unknown) {
    if (e === undefined) this.done()
    else this.failed(e)
  }
}

interface Waiter {
  resolve(tx: GroupTx): void
  reject(e: unknown): void
  at: number
  timer: ReturnType<typeof setTimeout>
}

/**
 * The write path of one process on a remote database (ADR 0019). sqld has one write lock, and an
 * interactive transaction holds it across every round trip it makes, while the process it serves is busy
 * with other requests; dozens of concurrent transactions per process queued in sqld behind each other
 * and the lock's hold times grew with the load until the write path stalled (issue 38). Here, as on a
 * local file (../local/client.ts), a process writes through one queue, on one stream kept open: the
 * transactions waiting for their turn are committed together in one database transaction, each under a
 * savepoint of its own (a member that fails rolls back to its savepoint, the others are unaffected; a
 * member's commit resolves once the batch has committed). Savepoint statements ride with the next
 * statement, so grouping costs no round trip; sqld sees one write transaction per process at a time,
 * held at most `batchBudgetMs` plus its last member. A transaction that waited too long for its turn,
 * holds its turn too long, or whose database does not answer fails as DatabaseBusy (503, Retry-After).
 */
export class GroupWriter {
  private queue: Waiter[] = []
  private running = false
  private batchStartedAt = 0
  private seq = 0
  private stream: hrana.Stream | null = null
  readonly stats = { batches: 0, transactions: 0 }
  private readonly o: Required<WriterOptions>

  constructor(
    private readonly openStream: () => Promise<hrana.Stream>,
    opts: WriterOptions = {},
  ) {
    this.o = {
      maxBatch: opts.maxBatch ?? 200,
      batchBudgetMs: opts.batchBudgetMs ?? 40,
      txTimeoutMs: opts.txTimeoutMs ?? 8000,
      queueTimeoutMs: opts.queueTimeoutMs ?? 8000,
      statementTimeoutMs: opts.statementTimeoutMs ?? 8000,
    }
  }

  state(): WriteQueueState {
    const now = performance.now()
    return {
      waiting: this.queue.length,
      oldestWaitMs: this.queue.length ? Math.round(now - this.queue[0]!.at) : 0,
      batchAgeMs: this.batchStartedAt ? Math.round(now - this.batchStartedAt) : 0,
      ...this.stats,
    }
  }

  /** A write transaction: its turn in this process's queue, inside the batch that turn falls in. */
  transaction(): Promise<GroupTx> {
    return new Promise<GroupTx>((resolve, reject) => {
      const w: Waiter = {
        resolve,
        reject,
        at: performance.now(),
        // refused while still waiting: the caller answers 503 rather than hang behind a stalled batch
        timer: setTimeout(() => {
          const i = this.queue.indexOf(w)
          if (i < 0) return
          this.queue.splice(i, 1)
          reject(new DatabaseBusy(`waited over ${this.o.queueTimeoutMs} ms for the write lock`))
        }, this.o.queueTimeoutMs),
      }
      this.queue.push(w)
      if (!this.running) void this.loop()
    })
  }

  /** `fn` in a transaction of its own turn (writes outside an explicit transaction). */
  async write<T>(fn: (tx: GroupTx) => Promise<T>): Promise<T> {
    const tx = await this.transaction()
    try {
      const out = await fn(tx)
      await tx.commit()
      return out
    } catch (e) {
      await tx.rollback()
      throw e
    }
  }

  close() {
    this.stream?.close()
    this.stream = null
  }

  private async loop() {
    this.running = true
    try {
      while (this.queue.length) await this.runBatch()
    } finally {
      this.running = false
    }
  }

  private async runBatch() {
    if (!this.stream || this.stream.closed) {
      try {
        this.stream = await this.openStream()
      } catch (e) {
        // the database cannot be reached: whoever waits now is told at once
        for (const w of this.queue.splice(0)) {
          clearTimeout(w.timer)
          w.reject(e)
        }
        return
      }
    }
    const batch = new Batch(this.stream, this.openStream, this.o.statementTimeoutMs)
    this.batchStartedAt = performance.now()
    const members: GroupTx[] = []
    let wrote = false
    try {
      while (this.queue.length && members.length < this.o.maxBatch && !batch.broken) {
        // the first member always runs; later ones while the batch is young
        if (members.length > 0 && performance.now() - this.batchStartedAt > this.o.batchBudgetMs) break
        const w = this.queue.shift()!
        clearTimeout(w.timer)
        const tx = new GroupTx(batch, `m${++this.seq}`, this.o.txTimeoutMs)
        w.resolve(tx)
        members.push(tx)
        if ((await tx.settled) === 'commit' && tx.wrote) wrote = true
      }
      this.stats.batches++
      this.stats.transactions += members.length
      if (wrote) await batch.commit()
      else await batch.rollback()
      for (const m of members) m.finish()
    } catch (e) {
      // a member that timed out while a round trip hung is told too (and rolled back, with the rest)
      for (const m of members) m.finish(e)
    } finally {
      this.stream = batch.stream
      // a batch that failed leaves its stream in an unknown state: closed (sqld rolls back what it held)
      if (batch.broken) {
        this.stream.close()
        this.stream = null
      }
      this.batchStartedAt = 0
    }
  }
}
