import type { InStatement, ResultSet, TransactionMode } from '@libsql/client'
import * as hrana from '@libsql/hrana-client'
import { DatabaseBusy } from '../errors'
import { GroupWriter, type WriteOrder, type WriteQueueState, type WriterOptions } from '../group-writer'
import { Link, mapError, runSteps, toHrana, toResultSet, transportOf } from './hrana'
import { streamBatches } from './stream-batch'

export type { WriteQueueState, WriterOptions }

/** Statements that write: outside a transaction they still take their turn in the write queue. */
const WRITE = /^\s*(insert|update|delete|replace)\b/i

/** Errors after which a stream is not used again: it closed, or the database forgot it. */
const STREAM_GONE =
  /HRANA_CLOSED_ERROR|HRANA_WEBSOCKET_ERROR|STREAM_EXPIRED|stream.*(closed|expired|not found)/i

export interface RemoteOptions extends WriterOptions {
  /**
   * A round trip to the database that has not answered after this long fails (ms): a write's fails its
   * batch; a read fails as busy.
   */
  statementTimeoutMs?: number
  /** Streams kept open for reads (each is a connection in sqld); reads queued on one are pipelined. */
  readStreams?: number
  /** HTTP only: the fetch to use (tests). */
  fetch?: typeof fetch
}

type Slot = { stream: Promise<hrana.Stream> | null; busy: number }

/**
 * Reads over a few streams kept open, each read on the least busy one. A read with no answer within the
 * bound fails as busy (503) and its stream is dropped: a database that stopped answering (paused, or
 * behind a network that drops packets) would otherwise hold every read, and its request, until it came
 * back.
 */
class ReadPool {
  /** Each slot's stream, as the promise of its opening: reads that arrive meanwhile wait for that one. */
  private readonly slots: Slot[]

  constructor(
    private readonly open: () => Promise<hrana.Stream>,
    size: number,
    private readonly timeoutMs: number,
  ) {
    this.slots = Array.from({ length: size }, () => ({ stream: null, busy: 0 }))
  }

  async execute(s: InStatement): Promise<ResultSet> {
    const at: { slot?: Slot; opening?: Promise<hrana.Stream>; expired?: boolean } = {}
    let timer: ReturnType<typeof setTimeout> | undefined
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        at.expired = true
        if (at.slot && at.slot.stream === at.opening) {
          at.slot.stream = null
          void at.opening?.then(
            (st) => st.close(),
            () => {},
          )
        }
        reject(new DatabaseBusy(`no answer from the database in ${this.timeoutMs} ms`))
      }, this.timeoutMs)
    })
    try {
      return await Promise.race([this.attempts(s, at), late])
    } finally {
      clearTimeout(timer)
    }
  }

  private async attempts(
    s: InStatement,
    at: { slot?: Slot; opening?: Promise<hrana.Stream>; expired?: boolean },
  ): Promise<ResultSet> {
    for (let attempt = 0; ; attempt++) {
      let slot = this.slots[0]!
      for (const x of this.slots) if (x.busy < slot.busy) slot = x
      const opening = slot.stream ?? this.open()
      slot.stream = opening
      at.slot = slot
      at.opening = opening
      slot.busy++
      let stream: hrana.Stream | undefined
      try {
        stream = await opening
        if (stream.closed) throw new hrana.ClosedError('the stream is closed', undefined)
        return toResultSet(await stream.query(toHrana(s)))
      } catch (e) {
        const mapped = mapError(e)
        const gone =
          !stream ||
          stream.closed ||
          STREAM_GONE.test(`${(mapped as { code?: string }).code} ${(mapped as Error).message}`)
        // one reopening per stream lost, however many reads were on it
        if (gone && slot.stream === opening) {
          stream?.close()
          slot.stream = null
        }
        // a read is asked again once on a fresh stream (the socket dropped, the HTTP stream expired);
        // not one whose caller was already told it timed out
        if (gone && attempt === 0 && !at.expired) continue
        throw mapped
      } finally {
        slot.busy--
      }
    }
  }

  close() {
    for (const x of this.slots) {
      void x.stream?.then(
        (st) => st.close(),
        () => {},
      )
      x.stream = null
    }
  }
}

/**
 * A libSQL client for a remote database (sqld, Turso) in a long-running process, the counterpart of the
 * local adapter (../local/client.ts): the interface of @libsql/client's Client that Db and drizzle use,
 * over Hrana streams kept open (./hrana.ts). Reads go to a small pool of streams; writes, in a
 * transaction or not, go through this process's write queue and are committed in groups
 * (../group-writer.ts, ADR 0019). Not for Workers, where no I/O object may outlive its request.
 */
export class RemoteClient {
  private readonly link: Link
  private readonly reads: ReadPool
  private readonly writer: GroupWriter
  readonly protocol: string
  closed = false

  constructor(url: string, authToken?: string, opts: RemoteOptions = {}) {
    const t = transportOf(url)
    this.protocol = t.transport
    this.link = new Link(t.url, t.transport, authToken, opts.fetch)
    const open = () => this.link.stream()
    const bound = opts.statementTimeoutMs ?? 8000
    this.reads = new ReadPool(open, opts.readStreams ?? 4, bound)
    this.writer = new GroupWriter(streamBatches(open, bound), opts)
  }

  state(): WriteQueueState {
    return this.writer.state()
  }

  execute(s: InStatement): Promise<ResultSet> {
    if (WRITE.test(typeof s === 'string' ? s : s.sql)) return this.writer.write((tx) => tx.execute(s))
    return this.reads.execute(s)
  }

  batch(stmts: InStatement[], _mode: TransactionMode = 'deferred'): Promise<ResultSet[]> {
    return this.writer.write((tx) => tx.batch(stmts))
  }

  transaction(_mode: TransactionMode = 'write', order?: WriteOrder) {
    return this.writer.transaction(order)
  }

  /**
   * drizzle's migrator: the migrations in one transaction with foreign keys off, on a stream of their own
   * (as @libsql/client does), before the process serves.
   */
  async migrate(stmts: InStatement[]): Promise<ResultSet[]> {
    const stream = await this.link.stream()
    try {
      const out = await runSteps(stream, ['PRAGMA foreign_keys=off', 'BEGIN', ...stmts, 'COMMIT'], 2)
      const failed = out.findIndex((o) => !('ok' in o))
      if (failed >= 0) {
        await runSteps(stream, ['ROLLBACK']).catch(() => {})
        const o = out[failed]!
        throw 'error' in o ? o.error : new Error(`migration statement ${failed - 2} was not run`)
      }
      return out.slice(2, 2 + stmts.length).map((o) => (o as { ok: ResultSet }).ok)
    } finally {
      await runSteps(stream, ['PRAGMA foreign_keys=on']).catch(() => {})
      stream.close()
    }
  }

  async executeMultiple(sql: string) {
    const stream = await this.link.stream()
    try {
      await stream.sequence(sql)
    } catch (e) {
      throw mapError(e)
    } finally {
      stream.close()
    }
  }

  async sync() {
    return undefined
  }

  close() {
    if (this.closed) return
    this.closed = true
    this.reads.close()
    this.writer.close()
    this.link.close()
  }
}
