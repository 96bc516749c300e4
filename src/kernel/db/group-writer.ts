import type { InStatement, ResultSet } from '@libsql/client'
import { DatabaseBusy } from './errors'

export interface WriterOptions {
  /** Transactions committed together at most (each under a savepoint of its own). */
  maxBatch?: number
  /** A batch takes no further transaction once it has held the write lock this long (ms). */
  batchBudgetMs?: number
  /**
   * When no one waits as a member settles, the batch gives the event loop one turn before it commits:
   * the requests read meanwhile join it if they reach their transaction within that turn.
   */
  gatherTurn?: boolean
  /** A transaction whose turn came and that has not settled after this long is rolled back (ms). */
  txTimeoutMs?: number
  /**
   * A transaction that waited this long for its turn is refused as busy (ms); its statements are not
   * sent later than this long after it asked for its turn either (WriteOrder.deadline).
   */
  queueTimeoutMs?: number
}

/**
 * The database transaction of one batch, whatever carries it (a remote stream, a local connection): its
 * members' statements in call order, with the bookkeeping that waits in `pending` (savepoints, deferred
 * writes) run first; `broken` once the database transaction is lost, which fails every member.
 */
export interface BatchPort {
  /**
   * Whether a member's deferred writes (Tx.deferred) wait in `pending` for the next statement (a round
   * trip saved) or run at once (no round trip to save: a failure stays the member's own).
   */
  readonly defers: boolean
  /**
   * Its round trips can hang (a remote database): statements carry their deadline. A local file's
   * cannot: its members' statements go straight through, with nothing to catch on the hot path.
   */
  readonly hangs?: boolean
  pending: InStatement[]
  readonly broken: unknown
  /**
   * Set with `broken` when a round trip got no answer within its whole bound (the database does not
   * answer): the transactions waiting for their turn are told at once, not handed one each on a database
   * that would hold it for the whole bound again.
   */
  readonly hung?: unknown
  /**
   * `deadline` (performance.now()): past it the statements are not sent (PastDeadline, nothing of them
   * run, the batch goes on; the member can no longer commit). `cut`: the batch holds nothing but this
   * member's work (no earlier member wrote), so a round trip not answered by the deadline is given up and
   * breaks the batch (the database rolls its transaction back, nothing of anyone's lost); otherwise it
   * gets its whole bound, as the work of the members before it would be lost with the batch, and one
   * answered past the deadline fails as PastDeadline (the member rolled back to its savepoint). Where a
   * round trip cannot hang (a local file) both are ignored.
   */
  run(stmts: InStatement[], deadline?: number, cut?: boolean): Promise<ResultSet[]>
  commit(): Promise<void>
  rollback(): Promise<void>
  /**
   * Rolls the database transaction back and lets the next statement begin a new one: how a batch's
   * first member that wrote is undone (it has no savepoint; nothing else is in the transaction yet).
   * Where it is absent every member has its savepoint: on sqld the savepoint statements ride with a round
   * trip the member makes anyway, and a rollback of the transaction would need one of its own.
   */
  restart?(): Promise<void>
}

/**
 * Where a transaction takes its turn. `urgent`: ahead of every waiting transaction that is not (the
 * engine's executions of stops and triggers, whose price is the tick's: a burst of notifications or
 * event deliveries waiting for their turn must not delay them); it joins the batch in progress, and
 * that batch commits after it (and after urgent ones right behind it) instead of taking more members.
 */
export interface WriteOrder {
  urgent?: boolean
  /**
   * When its request is answered at the latest (performance.now(); a function is asked once, when the
   * turn comes): the transaction's statements get what is left of it, so a turn that came late is not
   * held for a whole round trip's bound more on a database that does not answer. Past it a statement is
   * not sent, and the transaction can no longer commit (PastDeadline: rolled back to its savepoint, 503,
   * nothing of it written, the batch goes on); a round trip not answered by then is given up with its
   * batch while the batch holds nothing but this transaction's work, else it gets its whole bound and an
   * answer past the deadline fails the transaction alone. The COMMIT keeps its own bound (once sent it may
   * commit: it is never cut short). At the latest `queueTimeoutMs` after the transaction asked for its turn.
   */
  deadline?: number | (() => number)
}

/** Where a writer's batches come from. */
export interface BatchSource<B extends BatchPort> {
  /** A new batch; a failure here (the database cannot be reached) is told to whoever waits. */
  open(): Promise<B>
  /** The batch is over, committed or failed. */
  done(batch: B): void
  close(): void
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

/**
 * Every member's savepoint has this one name: a member's is released before the next one's begins, and a
 * name the database sees for the first time is a statement it prepares (and the local adapter caches).
 */
const MEMBER = 'member'

const TIMED_OUT = 'the transaction held its turn too long and was rolled back'

/**
 * A transaction's statements past its deadline (WriteOrder.deadline): not sent, answered after it, or a
 * round trip given up at it that the database had not left unanswered long (a slow statement, not a
 * database that does not answer). That transaction can no longer commit: its commit() rejects with this
 * and it is rolled back to its savepoint (with its batch when the round trip was given up). Those waiting
 * for their turn behind it are not refused for it (GroupCommit): the database answers.
 */
export class PastDeadline extends DatabaseBusy {}

/** Whether `e` (or what it wraps: drizzle's "Failed query") is a PastDeadline. */
export function isPastDeadline(e: unknown): boolean {
  for (let cur: any = e, depth = 0; cur && depth < 6; cur = cur.cause, depth++)
    if (cur instanceof PastDeadline) return true
  return false
}

/**
 * One member of a batch: what `transaction()` hands its caller. Its statements run under its own
 * savepoint, except the first member's of a transaction on a local file (`bare`): nothing is there to
 * keep from it, so undoing it is undoing the transaction (BatchPort.restart). A savepoint makes SQLite
 * keep the original of every page a statement first changes under it; the first member of a batch of
 * trade opens changes a page per login. `commit` resolves once the whole batch has committed, `rollback` undoes only its own
 * work.
 */
class GroupTx {
  private materialized = false
  private state: 'open' | 'commit' | 'rollback' = 'open'
  private timedOut = false
  /** A statement of it failed past its deadline (PastDeadline): it can only roll back. */
  private doomed: unknown = null
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
    private readonly group: BatchPort,
    timeoutMs: number,
    /** The first member of its database transaction: no savepoint (the writer restarts the batch). */
    readonly bare: boolean,
    /** Its statements are not sent, nor waited for, past this (performance.now(); WriteOrder.deadline). */
    private readonly deadline: number,
    /**
     * No earlier member of its batch wrote: a round trip of its may be given up at its deadline
     * (BatchPort.run), losing nobody else's work.
     */
    private readonly sole: boolean,
  ) {
    this.committed.catch(() => {})
    if (group.defers)
      this.defer = (sql, args = []) => {
        this.open()
        this.group.pending.push({ sql, args })
      }
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

  batch(stmts: InStatement[]): Promise<ResultSet[]> {
    this.open()
    if (!this.group.hangs) return this.group.run(stmts)
    return this.group.run(stmts, this.deadline, this.sole).catch((e: unknown) => {
      // some of its statements may have run, the rest not: it must not commit half of its work
      if (isPastDeadline(e)) this.doomed ??= e
      throw e
    })
  }

  async executeMultiple(sql: string) {
    for (const s of sql.split(';').filter((x) => x.trim())) await this.execute(s)
  }

  /** Refuses a settled member; its savepoint goes first, with its first statement. */
  private open() {
    if (this.state !== 'open')
      throw this.timedOut ? new DatabaseBusy(TIMED_OUT) : new Error('the transaction is closed')
    if (this.doomed) throw this.doomed
    if (this.materialized) return
    if (!this.bare) this.group.pending.push(`SAVEPOINT ${MEMBER}`)
    this.materialized = true
  }

  /**
   * A statement whose answer nobody reads, sent with the next round trip of the batch (Tx.deferred);
   * absent where the batch does not defer (Tx.deferred then runs it at once).
   */
  readonly defer?: (sql: string, args?: (string | number | null)[]) => void

  commit(): Promise<void> {
    // a statement of it was refused or given up past its deadline (a caller caught and went on): what it
    // wrote is undone, its caller told it was not committed
    if (this.doomed) {
      const e = this.doomed
      void this.rollback()
      return Promise.reject(e)
    }
    if (this.state === 'open') {
      this.state = 'commit'
      clearTimeout(this.timer)
      // released at once: the next member's savepoint is not nested in this one (SQLite checks every
      // open savepoint on each page a statement changes)
      if (this.materialized && !this.bare) this.group.pending.push(`RELEASE ${MEMBER}`)
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
      // a bare member's work is the whole transaction: the writer restarts it before the next member
      if (this.materialized && !this.bare)
        this.group.pending.push(`ROLLBACK TO ${MEMBER}`, `RELEASE ${MEMBER}`)
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
  /** A member: handed its transaction when its turn comes. */
  resolve(tx: GroupTx): void
  reject(e: unknown): void
  /** A turn of its own (`solo`): runs alone, between batches. */
  alone?: () => Promise<void>
  /** Goes ahead of every waiter that is not (WriteOrder). */
  urgent?: boolean
  /** WriteOrder.deadline. */
  deadline?: number | (() => number)
  at: number
  timer: ReturnType<typeof setTimeout>
}

/**
 * The write path of one process, on a remote database (ADR 0019) and on a local file (ADR 0025). sqld
 * has one write lock, and an interactive transaction holds it across every round trip it makes, while the
 * process it serves is busy with other requests; dozens of concurrent transactions per process queued in
 * sqld behind each other and the lock's hold times grew with the load until the write path stalled
 * (issue 38). On a local file every commit writes each page it changed to the WAL (two system calls per
 * page). So a process writes through one queue, on one stream kept open or its one writer connection:
 * the transactions waiting for their turn are committed together in one database transaction, each under
 * a savepoint of its own but the first on a local file (a member that fails rolls back to its savepoint,
 * or that first one the transaction, and the others are unaffected; a member's commit resolves once the
 * batch has committed). Savepoint statements ride with the next
 * statement, so grouping costs no round trip; the database sees one write transaction per process at a
 * time, held at most `batchBudgetMs` plus its last member. A transaction that waited too long for its
 * turn, holds its turn too long, or whose database does not answer fails as DatabaseBusy (503,
 * Retry-After).
 */
export class GroupWriter<B extends BatchPort = BatchPort> {
  private queue: Waiter[] = []
  private running = false
  private batchStartedAt = 0
  readonly stats = { batches: 0, transactions: 0 }
  private readonly o: Required<WriterOptions>

  constructor(
    private readonly source: BatchSource<B>,
    opts: WriterOptions = {},
  ) {
    this.o = {
      maxBatch: opts.maxBatch ?? 200,
      batchBudgetMs: opts.batchBudgetMs ?? 40,
      gatherTurn: opts.gatherTurn ?? false,
      txTimeoutMs: opts.txTimeoutMs ?? 8000,
      queueTimeoutMs: opts.queueTimeoutMs ?? 8000,
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
  transaction(order: WriteOrder = {}): Promise<GroupTx> {
    return new Promise<GroupTx>((resolve, reject) =>
      this.enqueue({ resolve, reject, urgent: order.urgent, deadline: order.deadline }),
    )
  }

  /**
   * `fn` with the queue to itself: the batch before it commits first, the next one waits until it has
   * settled (a local file's migrations, the checkpointer's restart round).
   */
  solo<T>(fn: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) =>
      this.enqueue({
        resolve: () => {},
        reject,
        alone: () => Promise.resolve().then(fn).then(resolve, reject),
      }),
    )
  }

  private enqueue(w: Omit<Waiter, 'at' | 'timer'>) {
    const waiter: Waiter = {
      ...w,
      at: performance.now(),
      // refused while still waiting: the caller answers 503 rather than hang behind a stalled batch
      timer: setTimeout(() => {
        const i = this.queue.indexOf(waiter)
        if (i < 0) return
        this.queue.splice(i, 1)
        w.reject(new DatabaseBusy(`waited over ${this.o.queueTimeoutMs} ms for the write lock`))
      }, this.o.queueTimeoutMs),
    }
    if (w.urgent) {
      const i = this.queue.findIndex((x) => !x.urgent)
      this.queue.splice(i < 0 ? this.queue.length : i, 0, waiter)
    } else this.queue.push(waiter)
    if (!this.running) void this.loop()
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

  /** Those still waiting for their turn are told; the batch in progress ends with its connection. */
  close() {
    for (const w of this.queue.splice(0)) {
      clearTimeout(w.timer)
      w.reject(new Error('the database is closed'))
    }
    this.source.close()
  }

  private async loop() {
    this.running = true
    try {
      while (this.queue.length) {
        const alone = this.queue[0]!.alone
        if (!alone) await this.runBatch()
        else {
          clearTimeout(this.queue.shift()!.timer)
          await alone()
        }
      }
    } finally {
      this.running = false
    }
  }

  private async runBatch() {
    let batch: B
    try {
      batch = await this.source.open()
    } catch (e) {
      // the database cannot be reached: the members waiting now are told at once
      this.refuseWaiting(e)
      return
    }
    this.batchStartedAt = performance.now()
    const members: GroupTx[] = []
    let wrote = false
    try {
      for (;;) {
        // the first member always runs; later ones while the batch is young
        const young = performance.now() - this.batchStartedAt <= this.o.batchBudgetMs
        if (members.length > 0 && !young) break
        if (this.queue.length === 0 && this.o.gatherTurn && wrote && !batch.broken) {
          await new Promise((r) => setImmediate(r))
          if (this.queue.length === 0) break
        }
        if (!this.queue.length || this.queue[0]!.alone || members.length >= this.o.maxBatch || batch.broken)
          break
        const w = this.queue.shift()!
        clearTimeout(w.timer)
        // its statements get what is left of the time it could wait for its turn, or of its request's
        let deadline = w.at + this.o.queueTimeoutMs
        if (w.deadline !== undefined)
          deadline = Math.min(deadline, typeof w.deadline === 'number' ? w.deadline : w.deadline())
        // until a member has written, the transaction holds nothing another member could lose
        const tx = new GroupTx(
          batch,
          this.o.txTimeoutMs,
          !wrote && batch.restart !== undefined,
          deadline,
          !wrote,
        )
        w.resolve(tx)
        members.push(tx)
        const outcome = await tx.settled
        if (outcome === 'commit' && tx.wrote) wrote = true
        else if (outcome === 'rollback' && tx.bare && tx.wrote) await batch.restart!()
        // an urgent member commits with what came before it, not after whatever waits behind it
        if (w.urgent && !this.queue[0]?.urgent) break
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
      this.source.done(batch)
      this.batchStartedAt = 0
    }
    // a round trip the database did not answer in its whole bound: those that waited behind it are told
    // now, nothing of theirs written; handed a turn each, they would wait out the bound once more (a turn
    // handed out just before its waiter's deadline held it for twice the bound, 15 s under a paused sqld)
    if (batch.hung)
      this.refuseWaiting(
        new DatabaseBusy(
          `the database did not answer the transaction ahead: ${(batch.hung as Error).message}`,
        ),
      )
  }

  /** The transactions waiting for their turn up to the next `solo` one are refused with `e`. */
  private refuseWaiting(e: unknown) {
    while (this.queue.length && !this.queue[0]!.alone) {
      const w = this.queue.shift()!
      clearTimeout(w.timer)
      w.reject(e)
    }
  }
}
