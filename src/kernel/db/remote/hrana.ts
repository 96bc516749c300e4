import { type InStatement, LibsqlError, type ResultSet } from '@libsql/client'
import * as hrana from '@libsql/hrana-client'

/**
 * The Hrana protocol (sqld, Turso) underneath the remote adapter: a link that keeps one client and opens
 * streams on it, statements and results in @libsql/client's shapes, and its errors with its codes.
 *
 * Why not @libsql/client's own remote clients: they open a stream for every statement outside a
 * transaction and for every transaction, and sqld opens a SQLite connection per stream. That cost sqld
 * 0.45 ms of CPU a statement over HTTP (0.38 over WebSockets) where a statement on a stream kept open
 * costs 0.25 (HTTP) or 0.14 ms (WebSockets): at 100 requests/s of the mixed load sqld used 83 % of a
 * core (ADR 0019).
 */

type Transport = 'ws' | 'http'

/** libsql:, ws:, wss: speak WebSockets (one socket, streams kept open); http:, https: speak HTTP. */
export function transportOf(url: string): { url: string; transport: Transport } {
  const u = new URL(url)
  const tls = u.searchParams.get('tls')
  u.searchParams.delete('tls')
  const secure = tls === null ? undefined : tls !== '0'
  switch (u.protocol) {
    case 'libsql:':
      u.protocol = secure === false ? 'ws:' : 'wss:'
      return { url: u.toString(), transport: 'ws' }
    case 'ws:':
    case 'wss:':
      return { url: u.toString(), transport: 'ws' }
    case 'http:':
    case 'https:':
      return { url: u.toString(), transport: 'http' }
    default:
      throw new Error(
        `DATABASE_URL: unsupported scheme ${u.protocol} (file:, libsql:, ws:, wss:, http: or https:)`,
      )
  }
}

/** The protocol version each stream's client settled on. */
const versions = new WeakMap<hrana.Stream, number>()

/**
 * One Hrana client (a WebSocket, or HTTP with its keep-alive connections) opened on first use and again
 * after it closed (sqld restarted, the socket dropped): streams opened afterwards use the new one.
 */
export class Link {
  private client: hrana.Client | null = null
  private version: Promise<number> | null = null

  constructor(
    private readonly url: string,
    private readonly transport: Transport,
    private readonly authToken?: string,
    private readonly fetchImpl?: typeof fetch,
  ) {}

  /** A new stream, once the protocol version is known (batch conditions depend on it). */
  async stream(): Promise<hrana.Stream> {
    if (!this.client || this.client.closed) {
      const client =
        this.transport === 'ws'
          ? hrana.openWs(this.url, this.authToken)
          : hrana.openHttp(this.url, this.authToken, this.fetchImpl)
      client.intMode = 'number'
      this.client = client
      this.version = client.getVersion()
    }
    const client = this.client
    let version: number
    try {
      version = await (this.version as Promise<number>)
    } catch (e) {
      if (this.client === client) {
        client.close()
        this.client = null
      }
      throw mapError(e)
    }
    const stream = client.openStream()
    versions.set(stream, version)
    return stream
  }

  close() {
    this.client?.close()
    this.client = null
  }
}

export function toHrana(s: InStatement): hrana.Stmt {
  const { sql, args } = typeof s === 'string' ? { sql: s, args: undefined } : s
  const stmt = new hrana.Stmt(sql)
  if (Array.isArray(args)) stmt.bindIndexes(args as hrana.InValue[])
  else if (args) for (const [k, v] of Object.entries(args)) stmt.bindName(k, v as hrana.InValue)
  return stmt
}

/** A Hrana result as @libsql/client returns it (its rows already carry the column names). */
export function toResultSet(r: hrana.RowsResult): ResultSet {
  const columns = r.columnNames.map((c) => c ?? '')
  const columnTypes = r.columnDecltypes.map((c) => c ?? '')
  const rows = r.rows
  const rowsAffected = r.affectedRowCount
  const lastInsertRowid = r.lastInsertRowid
  return {
    columns,
    columnTypes,
    rows,
    rowsAffected,
    lastInsertRowid,
    toJSON: () => ({
      columns,
      columnTypes,
      rows: rows.map((x) => Array.from({ length: x.length }, (_, i) => x[i])),
      rowsAffected,
      lastInsertRowid: lastInsertRowid?.toString(),
    }),
  } as unknown as ResultSet
}

function codeOf(e: hrana.ClientError): string {
  if (e instanceof hrana.ResponseError && e.code !== undefined) return e.code
  if (e instanceof hrana.ClosedError)
    return e.cause instanceof hrana.ClientError ? codeOf(e.cause) : 'HRANA_CLOSED_ERROR'
  if (e instanceof hrana.WebSocketError) return 'HRANA_WEBSOCKET_ERROR'
  if (e instanceof hrana.HttpServerError) return 'SERVER_ERROR'
  if (e instanceof hrana.ProtoError) return 'HRANA_PROTO_ERROR'
  return 'UNKNOWN'
}

/** A Hrana error as @libsql/client reports it: a LibsqlError with the SQLite or transport code. */
export function mapError(e: unknown): unknown {
  if (e instanceof hrana.ClientError) return new LibsqlError(e.message, codeOf(e), undefined, undefined, e)
  return e
}

/** The outcome of one step of a batch: its result, its error, or not run (a condition failed). */
export type StepOutcome = { ok: ResultSet } | { error: unknown } | { skipped: true }

/**
 * Runs statements as one batch (one round trip): each runs only if the one before succeeded, and those
 * from `guardFrom` on only while the stream is inside a transaction (a statement SQLite answered by
 * rolling the transaction back must not let the next ones run outside it). Resolves with each step's
 * outcome; rejects only when the round trip itself failed.
 */
export async function runSteps(
  stream: hrana.Stream,
  stmts: InStatement[],
  guardFrom = Number.POSITIVE_INFINITY,
): Promise<StepOutcome[]> {
  const batch = stream.batch(false)
  let prev: hrana.BatchStep | undefined
  const results = stmts.map((s, i) => {
    const step = batch.step()
    if (prev) step.condition(hrana.BatchCond.ok(prev))
    // the guard needs Hrana 3 (sqld and Turso speak it; an older server runs the batch without it)
    if (i >= guardFrom && (versions.get(stream) ?? 0) >= 3)
      step.condition(hrana.BatchCond.not(hrana.BatchCond.isAutocommit(batch)))
    prev = step
    return step.query(toHrana(s)).then(
      (r): StepOutcome => (r === undefined ? { skipped: true } : { ok: toResultSet(r) }),
      (e: unknown): StepOutcome => ({ error: mapError(e) }),
    )
  })
  try {
    await batch.execute()
  } catch (e) {
    throw mapError(e)
  }
  return Promise.all(results)
}
