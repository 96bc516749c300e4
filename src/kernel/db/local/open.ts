import { existsSync, mkdirSync, statSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import type { WriterOptions } from '../group-writer'
import { type Checkpointer, startCheckpointer } from './checkpointer'
import { LocalClient } from './client'

/**
 * Automatic checkpoint of the app's own connections, in pages (4 KiB): a safety net only, about 400 MiB
 * of WAL, should the checkpoint worker stop or its restarts keep missing (ADR 0003).
 */
const SAFETY_NET_CHECKPOINT_PAGES = 100_000

export interface LocalOptions {
  onCheckpointError?: (message: string) => void
  cacheMb?: number
  /** How long a write waits for another process's write lock before SQLITE_BUSY (503). */
  busyTimeoutMs?: number
  /** The writer's queue: timeouts (none by default) and how long a batch takes new members. */
  writer?: WriterOptions
  /** Tuning of the checkpoint worker (tests); the defaults are the production values. */
  checkpoint?: { intervalMs?: number; restartFrames?: number; holdLimitMs?: number }
}

/**
 * The file's directory: created when only its last level is missing (a fresh clone's `data/`), refused
 * when more is missing or it is not a directory, so that a mistyped path fails instead of silently
 * growing a tree somewhere else.
 */
function ensureDirectory(path: string): void {
  const dir = resolve(dirname(path))
  if (existsSync(dir)) {
    if (!statSync(dir).isDirectory()) throw new Error(`${dir} is not a directory`)
    return
  }
  if (!existsSync(dirname(dir))) throw new Error(`directory ${dirname(dir)} does not exist`)
  mkdirSync(dir)
}

/**
 * The local adapter: a libSQL file in WAL mode with per-connection settings and statement cache, writes
 * queued on one writer connection (./client.ts), and a worker thread that checkpoints the WAL (ADR 0003).
 * What it tunes serves one process writing one file; remote databases need none of it.
 */
export function openLocal(
  path: string,
  opts: LocalOptions = {},
): { client: LocalClient; checkpointer: Checkpointer | null; close(): void } {
  if (path !== ':memory:') ensureDirectory(path)
  // synchronous NORMAL is durable in WAL mode except for the last commits on power loss; the page cache
  // (SQLite's default is 2 MiB) holds the index pages a batch of opens touches all over `orders`
  const local = new LocalClient(
    path,
    [
      'PRAGMA journal_mode = WAL',
      'PRAGMA synchronous = NORMAL',
      `PRAGMA busy_timeout = ${opts.busyTimeoutMs ?? 5000}`,
      `PRAGMA wal_autocheckpoint = ${SAFETY_NET_CHECKPOINT_PAGES}`,
      `PRAGMA cache_size = ${-(opts.cacheMb ?? 64) * 1024}`,
    ],
    opts.writer,
  )
  const checkpointer =
    path === ':memory:'
      ? null
      : startCheckpointer(path, {
          onError: opts.onCheckpointError,
          holdWrites: (fn) => local.exclusive(fn),
          ...opts.checkpoint,
        })
  return {
    client: local,
    checkpointer,
    close() {
      checkpointer?.stop()
      local.close()
    },
  }
}
