import { type InStatement, LibsqlError, type ResultSet } from '@libsql/client'
import type * as hrana from '@libsql/hrana-client'
import { DatabaseBusy, isBusy } from '../errors'
import { type BatchPort, type BatchSource, PastDeadline } from '../group-writer'
import { runSteps, type StepOutcome } from './hrana'

const PAST_DEADLINE = "the transaction's request reached its write timeout (DATABASE_WRITE_TIMEOUT_MS)"

const rolledBack = () =>
  new LibsqlError('the transaction was rolled back by the database', 'TRANSACTION_CLOSED')

/**
 * The database transaction of one batch, on the writer's stream: BEGIN IMMEDIATE rides with the first
 * statement, savepoint bookkeeping with the next statement of whoever comes next, COMMIT at the end.
 */
export class StreamBatch implements BatchPort {
  /** Deferred writes ride with the next round trip: they cost none of their own. */
  readonly defers = true
  readonly hangs = true
  /** Savepoint bookkeeping and deferred writes, sent with the next round trip. */
  pending: InStatement[] = []
  broken: unknown = null
  /** A round trip got no answer within its whole bound (BatchPort.hung). */
  hung: unknown = null
  begun = false
  private chain: Promise<unknown> = Promise.resolve()

  constructor(
    public stream: hrana.Stream,
    private readonly reopen: () => Promise<hrana.Stream>,
    private readonly timeoutMs: number,
  ) {}

  /**
   * Statements of a member, one round trip with whatever bookkeeping is pending; in call order. Not sent
   * past `deadline`; waited for past it only when the batch holds others' work (`cut` false; BatchPort.run).
   */
  run(stmts: InStatement[], deadline = Number.POSITIVE_INFINITY, cut = true): Promise<ResultSet[]> {
    const next = this.chain.then(() => this.runNow(stmts, deadline, cut))
    this.chain = next.catch(() => {})
    return next
  }

  private async runNow(stmts: InStatement[], deadline: number, cut: boolean): Promise<ResultSet[]> {
    for (let attempt = 0; ; attempt++) {
      if (this.broken) throw this.broken
      const left = deadline - performance.now()
      // nothing sent: the member fails alone (it can no longer commit: GroupTx), the batch goes on
      if (left <= 0) throw new PastDeadline(PAST_DEADLINE)
      const head = this.begun ? [] : ['BEGIN IMMEDIATE']
      // taken now: what is pushed during the round trip (a member timed out, the next one's savepoint)
      // goes with the next one, not lost with this one's
      const pre = this.pending.splice(0)
      let out: StepOutcome[]
      try {
        // given up at the deadline only while the batch holds nothing but this member's work: the
        // members before it that wrote would be lost with it (their requests have their own bounds)
        out = await this.timed(
          runSteps(this.stream, [...head, ...pre, ...stmts], head.length),
          cut ? left : this.timeoutMs,
        )
      } catch (e) {
        // nothing began: a stream the database forgot (an idle HTTP stream expires) is replaced once; not
        // one that did not answer in time (the batch is broken: a new stream would not be used)
        if (!this.begun && attempt === 0 && !this.broken) {
          this.pending.unshift(...pre)
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
            this.pending.unshift(...pre)
            await new Promise((r) => setTimeout(r, 5 * 2 ** attempt))
            continue
          }
          this.broken = e
          throw e
        }
        this.begun = true
      }
      for (let i = head.length; i < head.length + pre.length; i++) {
        const o = out[i]!
        if (!('ok' in o)) {
          this.broken = 'error' in o ? o.error : rolledBack()
          throw this.broken
        }
      }
      // answered past the deadline (it had its whole bound: others' work is in the batch): the member's
      // statements ran, and are undone with it (GroupTx rolls it back to its savepoint)
      if (performance.now() > deadline) throw new PastDeadline(`${PAST_DEADLINE}: answered after it`)
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
    const out = await this.timed(runSteps(this.stream, [...this.pending.splice(0), 'COMMIT']))
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

  /**
   * A round trip given up after `ms` (at most the bound): the batch is broken, its stream closed (the
   * database rolls back what the batch held). Only the COMMIT's may have committed: it always gets the
   * whole bound, as the last round trip a request waits for. The database is taken as not answering
   * (`hung`: those waiting for their turn are refused) when it left the round trip unanswered for at
   * least half the bound: with every bound the same (production), a round trip sent as its request
   * arrived is given up at its deadline, a little short of the whole bound. One given up sooner (a turn
   * that came late, a slow statement) fails its own transaction only (PastDeadline).
   */
  private timed<T>(p: Promise<T>, ms = this.timeoutMs): Promise<T> {
    let timer: ReturnType<typeof setTimeout> | undefined
    const whole = ms >= this.timeoutMs
    const wait = whole ? this.timeoutMs : Math.max(0, ms)
    return Promise.race([
      p,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          const hung = wait >= this.timeoutMs / 2
          const e = whole
            ? new DatabaseBusy(`no answer from the database in ${this.timeoutMs} ms`)
            : hung
              ? new DatabaseBusy(`${PAST_DEADLINE}: no answer from the database in ${Math.round(wait)} ms`)
              : new PastDeadline(`${PAST_DEADLINE}: no answer from the database by then`)
          this.broken = e
          if (hung) this.hung = e
          reject(e)
        }, wait)
      }),
    ]).finally(() => clearTimeout(timer))
  }
}

/**
 * The batches of a remote database's writer, each on the stream kept open for writes (one sqld connection
 * per process): opened on first use, replaced after a batch that failed (sqld rolls back what it held).
 */
export function streamBatches(
  openStream: () => Promise<hrana.Stream>,
  statementTimeoutMs: number,
): BatchSource<StreamBatch> {
  let stream: hrana.Stream | null = null
  return {
    async open() {
      if (!stream || stream.closed) stream = await openStream()
      return new StreamBatch(stream, openStream, statementTimeoutMs)
    },
    done(batch) {
      stream = batch.stream
      // a batch that failed leaves its stream in an unknown state: closed
      if (batch.broken) {
        stream.close()
        stream = null
      }
    },
    close() {
      stream?.close()
      stream = null
    },
  }
}
