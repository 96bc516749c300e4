import type { InArgs, InStatement, InValue, ResultSet, Row, TransactionMode } from '@libsql/client'
import Database from 'libsql'
import { GroupWriter, type WriteOrder, type WriterOptions } from '../group-writer'
import { type LocalBatch, localBatches } from './batch'

type Connection = InstanceType<typeof Database>
type Statement = ReturnType<Connection['prepare']>

/** Statements that change the schema: a statement prepared before one may keep its old shape. */
const DDL = /^\s*(create|alter|drop)\b/i
const MIN_SAFE = BigInt(Number.MIN_SAFE_INTEGER)
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER)
const PER_CONNECTION = 256
/** Statements that write: outside a transaction they still go through the writer, in turn. */
const WRITE = /^\s*(insert|update|delete|replace)\b/i

/**
 * The local writer's defaults. It waits and holds its turn as long as it takes unless told otherwise
 * (LocalOptions.writer; the server gives it DATABASE_WRITE_TIMEOUT_MS): a bench's seeding transaction
 * may run for minutes. About 24 days: the longest timer there is.
 */
const LOCAL_WRITER = {
  txTimeoutMs: 2 ** 31 - 1,
  queueTimeoutMs: 2 ** 31 - 1,
  batchBudgetMs: 10,
  gatherTurn: true,
}

/** A prepared statement and what it returns, kept per connection (least recently used out first). */
interface Prepared {
  stmt: Statement
  columns: string[] | null
  columnTypes: string[]
  /** Builds its rows (a reader's). */
  row: ((values: unknown[]) => Row) | null
}

function fromSql(v: unknown): InValue {
  if (typeof v === 'bigint') {
    if (v < MIN_SAFE || v > MAX_SAFE)
      throw new RangeError('Received integer which cannot be safely represented as a JavaScript number')
    return Number(v)
  }
  if (v instanceof Uint8Array) return v.buffer as ArrayBuffer
  return v as InValue
}

function toSql(v: InValue): unknown {
  if (typeof v === 'number' && !Number.isFinite(v))
    throw new RangeError('Only finite numbers (not Infinity or NaN) can be passed as arguments')
  if (typeof v === 'boolean') return v ? 1 : 0
  if (v instanceof Date) return v.valueOf()
  if (v instanceof ArrayBuffer) return Buffer.from(v)
  if (v === undefined) throw new TypeError('undefined cannot be passed as argument to the database')
  return v
}

function bindArgs(args: InArgs | undefined): unknown[] {
  if (!args) return []
  if (Array.isArray(args)) return [args.map(toSql)]
  const named: Record<string, unknown> = {}
  for (const name in args)
    named[name[0] === '@' || name[0] === '$' || name[0] === ':' ? name.slice(1) : name] = toSql(args[name])
  return [named]
}

/** A row as @libsql/client shapes it: positions and, enumerable, the column names. */
function toRow(values: unknown[], columns: readonly string[]): Row {
  const row: Record<string | number, unknown> = {}
  Object.defineProperty(row, 'length', { value: values.length })
  for (let i = 0; i < values.length; i++) {
    const v = fromSql(values[i])
    Object.defineProperty(row, i, { value: v })
    const name = columns[i]
    if (!Object.hasOwn(row, name))
      Object.defineProperty(row, name, { value: v, enumerable: true, configurable: true, writable: true })
  }
  return row as unknown as Row
}

const POSITIONS = Symbol('positions')
/** Column names a row's own property would take from its positions or its length. */
const CLASHES = /^(length|__proto__|0|[1-9]\d*)$/

/**
 * Rows of one statement, shaped as `toRow` shapes them but built by a constructor of their own: the
 * names are plain assignments in a fixed order (one hidden class), the positions and the length getters
 * on its prototype. Defining each property of each row cost ~3.5 µs per row of 30 columns, ~0.7 µs this
 * way. Column lists a name of which would clash with a position or the length keep `toRow`.
 */
function rowShape(columns: readonly string[]): (values: unknown[]) => Row {
  if (columns.some((c) => CLASHES.test(c))) return (values) => toRow(values, columns)
  const named: number[] = []
  const seen = new Set<string>()
  columns.forEach((c, i) => {
    if (seen.has(c)) return
    seen.add(c)
    named.push(i)
  })
  const repeated = named.length < columns.length
  function Shape(this: Record<string | symbol, unknown>, values: unknown[]) {
    for (let k = 0; k < named.length; k++) {
      const i = named[k]!
      this[columns[i]!] = values[i]
    }
    // a name that repeats is the first column's: the later positions read their own value
    if (repeated) Object.defineProperty(this, POSITIONS, { value: values })
  }
  const proto = Shape.prototype as Record<string | symbol, unknown>
  Object.defineProperty(proto, 'length', { value: columns.length })
  columns.forEach((c, i) => {
    const get = named.includes(i)
      ? function (this: Record<string, unknown>) {
          return this[c]
        }
      : function (this: Record<symbol, unknown[]>) {
          return this[POSITIONS]![i]
        }
    Object.defineProperty(proto, i, { get })
  })
  return (values) => {
    for (let i = 0; i < values.length; i++) values[i] = fromSql(values[i])
    return new (Shape as unknown as new (v: unknown[]) => Row)(values)
  }
}

function resultSet(columns: string[], columnTypes: string[], rows: Row[], affected: number, last?: bigint) {
  return {
    columns,
    columnTypes,
    rows,
    rowsAffected: affected,
    lastInsertRowid: last,
    toJSON() {
      return { columns, columnTypes, rows, rowsAffected: affected, lastInsertRowid: last?.toString() }
    },
  } as ResultSet
}

/** One connection and its statement cache. */
class Conn {
  readonly db: Connection
  private cache = new Map<string, Prepared>()
  private closed = false

  constructor(path: string, setup: readonly string[]) {
    this.db = new Database(path)
    for (const s of setup) this.db.exec(s)
  }

  private prepared(sql: string): Prepared {
    const hit = this.cache.get(sql)
    if (hit) {
      // refresh its place in the LRU order
      this.cache.delete(sql)
      this.cache.set(sql, hit)
      return hit
    }
    const stmt = this.db.prepare(sql)
    stmt.safeIntegers(true)
    const described = stmt.reader ? stmt.columns() : null
    // rows as arrays, set once: the driver's raw() cost 2-3 µs a call, a third of a one-row read
    if (described) stmt.raw(true)
    const columns = described ? described.map((c) => c.name) : null
    const p = {
      stmt,
      columns,
      columnTypes: described ? described.map((c) => c.type ?? '') : [],
      row: columns ? rowShape(columns) : null,
    }
    if (DDL.test(sql)) return p
    if (this.cache.size >= PER_CONNECTION) this.cache.delete(this.cache.keys().next().value!)
    this.cache.set(sql, p)
    return p
  }

  execute(s: InStatement): ResultSet {
    // the driver aborts the process on a closed connection (a transaction that goes on after close)
    if (this.closed) throw new Error('the database is closed')
    const sql = typeof s === 'string' ? s : s.sql
    const args = typeof s === 'string' ? [] : bindArgs(s.args)
    // a schema change empties the cache: statements prepared before it may keep the old shape
    if (DDL.test(sql)) this.cache = new Map()
    const p = this.prepared(sql)
    if (p.columns) {
      const raw = (p.stmt.all as (...a: unknown[]) => unknown[])(...args) as unknown[][]
      const columns = p.columns
      return resultSet(columns, p.columnTypes, raw.map(p.row!), 0)
    }
    const info = (p.stmt.run as (...a: unknown[]) => { changes: number; lastInsertRowid: number | bigint })(
      ...args,
    )
    return resultSet([], [], [], info.changes, BigInt(info.lastInsertRowid))
  }

  get cached() {
    return this.cache.size
  }

  get inTransaction() {
    return !this.closed && this.db.inTransaction
  }

  close() {
    this.closed = true
    this.cache.clear()
    this.db.close()
  }
}

/**
 * A libSQL client for a local file, through the `libsql` package's own API (better-sqlite3's): what
 * `@libsql/client` does for a file, plus what one process writing a local file needs. @libsql/client
 * prepares every statement again on every execute, and preparing a statement on `orders` compiles its
 * triggers and indexes (100-300 µs, several times what running it costs for a batch of opens): each
 * connection here keeps its statements (ADR 0004). Two connections: the writer and the reader for
 * everything else, with the same settings. Write transactions take turns on the writer; those that waited
 * for their turn commit together, each under a savepoint of its own, as on a remote database (ADR 0025).
 * Rows, errors and integers behave as in @libsql/client (`intMode: 'number'`).
 */
export class LocalClient {
  private readonly writer: Conn
  private readonly reader: Conn
  /** The writer's queue: transactions that waited for their turn commit together (../group-writer.ts). */
  private readonly writes: GroupWriter<LocalBatch>
  closed = false
  readonly protocol = 'file'

  constructor(path: string, setup: readonly string[], writer: WriterOptions = {}) {
    this.writer = new Conn(path, setup)
    // an in-memory database exists per connection: there it is one connection for everything
    this.reader = path === ':memory:' ? this.writer : new Conn(path, setup)
    this.writes = new GroupWriter(localBatches(this.writer), { ...LOCAL_WRITER, ...writer })
  }

  /**
   * Reads on the reader connection. A write outside a transaction takes its turn on the writer: on the
   * reader it would wait, blocking the only JavaScript thread, for a write lock this process holds.
   */
  async execute(s: InStatement): Promise<ResultSet> {
    if (WRITE.test(typeof s === 'string' ? s : s.sql)) return this.writes.write((tx) => tx.execute(s))
    return this.reader.execute(s)
  }

  transaction(_mode: TransactionMode = 'write', order?: WriteOrder) {
    return this.writes.transaction(order)
  }

  /** What the write queue is doing (/health/ready). */
  state() {
    return this.writes.state()
  }

  /** Holds the writer's queue while `fn` runs (the checkpointer's restart round). */
  exclusive<T>(fn: () => Promise<T>): Promise<T> {
    return this.writes.solo(fn)
  }

  batch(stmts: InStatement[], _mode: TransactionMode = 'deferred'): Promise<ResultSet[]> {
    return this.writes.write((tx) => tx.batch(stmts))
  }

  /** drizzle's migrator: the statements in one transaction of their own, with foreign keys off. */
  migrate(stmts: InStatement[]): Promise<ResultSet[]> {
    return this.writes.solo(async () => {
      this.writer.execute('PRAGMA foreign_keys=off')
      try {
        this.writer.execute('BEGIN')
        try {
          const out = stmts.map((s) => this.writer.execute(s))
          this.writer.execute('COMMIT')
          return out
        } catch (e) {
          if (this.writer.inTransaction) this.writer.execute('ROLLBACK')
          throw e
        }
      } finally {
        this.writer.execute('PRAGMA foreign_keys=on')
      }
    })
  }

  async executeMultiple(sql: string) {
    if (this.closed) throw new Error('the database is closed')
    this.reader.db.exec(sql)
  }

  async sync() {
    return undefined
  }

  /** Prepared statements kept by the reader and the writer connection (tests). */
  get statementsCached() {
    return { reader: this.reader.cached, writer: this.writer.cached }
  }

  close() {
    if (this.closed) return
    this.closed = true
    this.writes.close()
    this.writer.close()
    if (this.reader !== this.writer) this.reader.close()
  }
}
