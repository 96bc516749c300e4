import type { Client } from '@libsql/client'
import { Db } from './db'
import type { Checkpointer } from './local/checkpointer'
import { type LocalOptions, openLocal } from './local/open'
import { RemoteClient, type RemoteOptions, type WriteQueueState } from './remote/client'

export { Db, type Queryable, Tx } from './db'

export interface Database {
  db: Db
  /** Local files: the worker that checkpoints the WAL (null for remote databases). */
  checkpointer: Checkpointer | null
  /** This process's write queue (kernel/db/group-writer.ts). */
  writes: (() => WriteQueueState) | null
  close(): void
}

export type { LocalOptions, RemoteOptions, WriteQueueState }

function filePath(url: string): string | null {
  if (!url.startsWith('file:')) return null
  return url.slice('file:'.length).replace(/^\/\/(?=\/)/, '')
}

/**
 * Opens libSQL: a remote sqld/Turso over HTTP or WebSockets (@libsql/client) with this process's writes
 * queued and committed together (kernel/db/remote/client.ts), or a local file through the local adapter
 * (kernel/db/local/open.ts), whose tuning serves one process writing one file.
 */
export async function openDatabase(
  url: string,
  authToken?: string,
  opts: LocalOptions & { remote?: RemoteOptions } = {},
): Promise<Database> {
  const path = filePath(url)
  if (path) {
    const local = openLocal(path, opts)
    return {
      db: new Db(local.client as unknown as Client),
      checkpointer: local.checkpointer,
      writes: () => local.client.state(),
      close: local.close,
    }
  }
  const remote = new RemoteClient(url, authToken, opts.remote)
  return {
    db: new Db(remote as unknown as Client),
    checkpointer: null,
    writes: () => remote.state(),
    close: () => remote.close(),
  }
}
