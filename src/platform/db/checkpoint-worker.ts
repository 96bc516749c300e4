// Worker thread of src/platform/db/checkpointer.ts: its own connection copies the WAL back into the
// database file (PASSIVE: never waits for, nor blocks, the readers and the writer).
import { readlinkSync } from 'node:fs'
import { setPriority } from 'node:os'
import Database from 'libsql'

declare const self: Worker

/** Start (path, interval), or run one round now and answer it with its id. */
export type CheckpointWorkerMessage = { path: string; intervalMs: number } | { round: number }

/**
 * Background maintenance yields to request handling: this thread runs at nice 10 (Linux sets the nice
 * value per thread). Where requests and checkpoints share a core, a 10-20 ms checkpoint otherwise
 * halves the speed of the batch that is committing meanwhile; the safety-net checkpoint of the app's
 * connections bounds the WAL should this thread fall behind.
 */
function lowerPriority() {
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop())
    if (Number.isInteger(tid)) setPriority(tid, 10)
  } catch {
    // not Linux: the thread keeps the process's priority
  }
}

let round: ((id?: number) => void) | null = null

self.onmessage = (e: MessageEvent<CheckpointWorkerMessage>) => {
  if ('round' in e.data) return round?.(e.data.round)
  const { path, intervalMs } = e.data
  lowerPriority()
  const db = new Database(path)
  db.exec('PRAGMA busy_timeout = 0')
  const checkpoint = db.prepare('PRAGMA wal_checkpoint(PASSIVE)')
  round = (id) => {
    try {
      const [busy, log, done] = checkpoint.raw(true).get() as [number, number, number]
      self.postMessage({ id, busy, log, done })
    } catch (err) {
      // SQLITE_BUSY while the app's own safety-net checkpoint runs: the next round catches up
      self.postMessage({ id, error: err instanceof Error ? err.message : String(err) })
    }
  }
  setInterval(() => round?.(), intervalMs)
}
