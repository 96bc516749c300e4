import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import { type Client, createClient } from '@libsql/client'
import { drizzle } from 'drizzle-orm/libsql'
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
  close(): void
}

function filePath(url: string): string | null {
  if (!url.startsWith('file:')) return null
  return url.slice('file:'.length).replace(/^\/\/(?=\/)/, '')
}

/**
 * Opens libSQL: a local file (embedded default) or a remote sqld/Turso over HTTP/WS.
 * File databases run in WAL mode with a busy timeout so concurrent writers wait instead of failing.
 */
export async function openDatabase(url: string, authToken?: string): Promise<Database> {
  const path = filePath(url)
  if (path && path !== ':memory:') mkdirSync(dirname(path), { recursive: true })
  const client = createClient({ url, authToken, intMode: 'number', timeout: 5, concurrency: POOL } as never)
  const db = makeDrizzle(client)
  if (!path) return { client, db, close: () => client.close() }
  cacheLocalStatements()
  await client.execute('PRAGMA journal_mode = WAL')
  await configureEveryConnection(client)
  serializeWrites(db)
  return { client, db, close: () => client.close() }
}

const POOL = 8

/**
 * Connection settings of SQLite are per connection, and the client opens its pool lazily: every
 * connection is opened and configured here, by pinning each one in a deferred transaction while the
 * next is created (before, only the first connection had them, and a write could run on another with
 * synchronous FULL and no busy timeout). synchronous NORMAL is durable in WAL mode except for the last
 * commits on power loss.
 */
async function configureEveryConnection(client: Client) {
  const pinned = []
  for (let i = 0; i < POOL; i++) {
    await client.execute('PRAGMA synchronous = NORMAL')
    await client.execute('PRAGMA busy_timeout = 5000')
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
  db.transaction = ((fn: never, config?: never) => {
    const run = tail.then(() => original(fn, config))
    tail = run.catch(() => {})
    return run
  }) as Db['transaction']
}
