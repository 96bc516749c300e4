import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import { type Client, createClient } from '@libsql/client'
import { drizzle } from 'drizzle-orm/libsql'
import { type Checkpointer, startCheckpointer } from './checkpointer'
import { cacheLocalStatements } from './statement-cache'

export type Db = ReturnType<typeof makeDrizzle>
export type Tx = Parameters<Parameters<Db['transaction']>[0]>[0]
/** Queries that work inside or outside a transaction. */
export type Queryable = Db | Tx

// No relational `schema`: nothing uses db.query, and with it every transaction builds a query builder per table.
const makeDrizzle = (client: Client) => drizzle(client)

export interface Database {
  client: Client
  db: Db
  /** Local files: the worker that checkpoints the WAL (null for remote databases). */
  checkpointer: Checkpointer | null
  close(): void
}

function filePath(url: string): string | null {
  if (!url.startsWith('file:')) return null
  return url.slice('file:'.length).replace(/^\/\/(?=\/)/, '')
}

/**
 * Opens libSQL: a local file (embedded default) or a remote sqld/Turso over HTTP/WS.
 * File databases run in WAL mode with a busy timeout so concurrent writers wait instead of failing,
 * and a worker thread checkpoints their WAL (kernel/db/checkpointer).
 */
export async function openDatabase(
  url: string,
  authToken?: string,
  opts: {
    onCheckpointError?: (message: string) => void
    cacheMb?: number
    /** Lock the WAL's pages in memory (kernel/db/wal-residency); off unless asked for. */
    residentWal?: boolean
    /** Tuning of the checkpoint worker (tests); the defaults are the production values. */
    checkpoint?: { intervalMs?: number; restartFrames?: number; holdLimitMs?: number }
  } = {},
): Promise<Database> {
  const path = filePath(url)
  if (path && path !== ':memory:') mkdirSync(dirname(path), { recursive: true })
  const client = createClient({ url, authToken, intMode: 'number', timeout: 5, concurrency: POOL } as never)
  const db = makeDrizzle(client)
  if (!path) return { client, db, checkpointer: null, close: () => client.close() }
  cacheLocalStatements()
  await client.execute('PRAGMA journal_mode = WAL')
  await configureEveryConnection(client, opts.cacheMb ?? 64)
  const holdWrites = serializeWrites(db)
  const checkpointer =
    path === ':memory:'
      ? null
      : startCheckpointer(path, {
          onError: opts.onCheckpointError,
          residentWal: opts.residentWal,
          holdWrites,
          ...opts.checkpoint,
        })
  return {
    client,
    db,
    checkpointer,
    close() {
      checkpointer?.stop()
      client.close()
    },
  }
}

const POOL = 8
/**
 * Automatic checkpoint of the app's own connections, in pages (4 KiB): a safety net only, about 400 MiB
 * of WAL, should the checkpoint worker stop or its restarts keep missing (kernel/db/checkpointer);
 * SQLite's default of 1000 put the copy inside a commit, and at 20,000 a steady stream of writes reached
 * it every second or two.
 */
const SAFETY_NET_CHECKPOINT_PAGES = 100_000

/**
 * Connection settings of SQLite are per connection, and the client opens its pool lazily: every
 * connection is opened and configured here, by pinning each one in a deferred transaction while the
 * next is created (before, only the first connection had them, and a write could run on another with
 * synchronous FULL and no busy timeout). synchronous NORMAL is durable in WAL mode except for the last
 * commits on power loss. The automatic checkpoint is the worker's job; what is left here is a safety net.
 * The page cache (SQLite's default is 2 MiB) holds the index pages a batch of opens touches all over
 * `orders` (one per login); it grows only as pages are used (DATABASE_CACHE_MB).
 */
async function configureEveryConnection(client: Client, cacheMb: number) {
  const pinned = []
  for (let i = 0; i < POOL; i++) {
    await client.execute('PRAGMA synchronous = NORMAL')
    await client.execute('PRAGMA busy_timeout = 5000')
    await client.execute(`PRAGMA wal_autocheckpoint = ${SAFETY_NET_CHECKPOINT_PAGES}`)
    await client.execute(`PRAGMA cache_size = ${-cacheMb * 1024}`)
    if (i < POOL - 1) pinned.push(await client.transaction('deferred'))
  }
  for (const tx of pinned) tx.close()
}
/**
 * The local libSQL driver is synchronous: a second connection waiting on SQLite's write lock blocks the
 * only JS thread, so the transaction holding the lock can never commit (an in-process deadlock until the
 * busy timeout). Write transactions of one process therefore queue here; other processes still
 * coordinate through SQLite's lock. Every write in this code base runs inside `db.transaction`.
 */
function serializeWrites(db: Db) {
  const original = db.transaction.bind(db)
  let tail: Promise<unknown> = Promise.resolve()
  const queue = <T>(fn: () => Promise<T>): Promise<T> => {
    const run = tail.then(fn)
    tail = run.catch(() => {})
    return run
  }
  db.transaction = ((fn: never, config?: never) => queue(() => original(fn, config))) as Db['transaction']
  // a turn in the same queue without a transaction: the checkpointer's restart round
  return (fn: () => Promise<void>) => queue(fn)
}
