import type { Client } from '@libsql/client'
import { createClient } from '@libsql/client'
import { Db } from './db'
import type { Checkpointer } from './local/checkpointer'
import { type LocalOptions, openLocal } from './local/open'

export { Db, type Queryable, Tx } from './db'

export interface Database {
  db: Db
  /** Local files: the worker that checkpoints the WAL (null for remote databases). */
  checkpointer: Checkpointer | null
  close(): void
}

export type { LocalOptions }

function filePath(url: string): string | null {
  if (!url.startsWith('file:')) return null
  return url.slice('file:'.length).replace(/^\/\/(?=\/)/, '')
}

/**
 * Opens libSQL: a remote sqld/Turso over HTTP or WebSockets (@libsql/client), or a local file through
 * the local adapter (kernel/db/local/open.ts), whose tuning serves one process writing one file.
 */
export async function openDatabase(
  url: string,
  authToken?: string,
  opts: LocalOptions = {},
): Promise<Database> {
  const path = filePath(url)
  if (path) {
    const local = openLocal(path, opts)
    return {
      db: new Db(local.client as unknown as Client),
      checkpointer: local.checkpointer,
      close: local.close,
    }
  }
  const client = createClient({ url, authToken, intMode: 'number' })
  return { db: new Db(client), checkpointer: null, close: () => client.close() }
}
