import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import { type Client, createClient } from '@libsql/client'
import { drizzle } from 'drizzle-orm/libsql'
import * as schema from './schema'

export type Db = ReturnType<typeof makeDrizzle>
export type Tx = Parameters<Parameters<Db['transaction']>[0]>[0]
/** Queries that work inside or outside a transaction. */
export type Queryable = Db | Tx

const makeDrizzle = (client: Client) => drizzle(client, { schema })

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
  const client = createClient({ url, authToken, intMode: 'number', timeout: 5, concurrency: 8 } as never)
  if (path) {
    await client.execute('PRAGMA journal_mode = WAL')
    await client.execute('PRAGMA synchronous = NORMAL')
    await client.execute('PRAGMA busy_timeout = 5000')
  }
  return { client, db: makeDrizzle(client), close: () => client.close() }
}
