import type { InStatement, ResultSet } from '@libsql/client'
import type { BatchPort, BatchSource } from '../group-writer'

/** The writer connection as a batch needs it (./client.ts). */
export interface WriterConnection {
  execute(s: InStatement): ResultSet
  readonly inTransaction: boolean
}

/**
 * The database transaction of one batch on the local writer connection: statements run as they come
 * (synchronously: no round trip to save), BEGIN IMMEDIATE before the first, the bookkeeping waiting in
 * `pending` (a member's savepoint, its release or rollback) before the next.
 */
export class LocalBatch implements BatchPort {
  /** A statement runs at once here: a deferred write's failure stays with its member. */
  readonly defers = false
  pending: InStatement[] = []
  broken: unknown = null
  private begun = false

  constructor(private readonly conn: WriterConnection) {}

  async run(stmts: InStatement[]): Promise<ResultSet[]> {
    this.flush()
    const out: ResultSet[] = []
    for (const s of stmts) {
      try {
        out.push(this.conn.execute(s))
      } catch (e) {
        // SQLite rolled the whole transaction back (a full disk, an I/O error): every member goes with it
        if (!this.conn.inTransaction) this.broken = e
        throw e
      }
    }
    return out
  }

  /** BEGIN and what is pending; a failure here breaks the batch. */
  private flush() {
    if (this.broken) throw this.broken
    try {
      if (!this.begun) {
        this.conn.execute('BEGIN IMMEDIATE')
        this.begun = true
      }
      const pre = this.pending
      this.pending = []
      for (const s of pre) this.conn.execute(s)
    } catch (e) {
      this.broken = e
      this.abandon()
      throw e
    }
  }

  async commit() {
    if (!this.begun && this.pending.length === 0) return
    this.flush()
    try {
      this.conn.execute('COMMIT')
    } catch (e) {
      this.broken = e
      this.abandon()
      throw e
    }
  }

  async rollback() {
    this.pending = []
    this.abandon()
  }

  async restart() {
    this.pending = []
    if (this.broken) return
    this.abandon()
    if (this.conn.inTransaction) this.broken = new Error('the transaction could not be rolled back')
    else this.begun = false
  }

  private abandon() {
    if (!this.conn.inTransaction) return
    try {
      this.conn.execute('ROLLBACK')
    } catch {
      // the connection rolls back on its own when it closes
    }
  }
}

/** The batches of the local writer: all on its one connection. */
export function localBatches(conn: WriterConnection): BatchSource<LocalBatch> {
  return {
    open: async () => new LocalBatch(conn),
    done() {},
    close() {},
  }
}
