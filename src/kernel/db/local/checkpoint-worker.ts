// Worker thread of src/kernel/db/local/checkpointer.ts: its own connection copies the WAL back into the
// database file (PASSIVE: never waits for, nor blocks, the readers and the writer).
import { readlinkSync } from 'node:fs'
import { setPriority } from 'node:os'
import Database from 'libsql'
import { keepWalResident } from './wal-residency'

declare const self: Worker

/**
 * Start (path, interval, whether to lock the WAL in memory), run one round now and answer it with its
 * id, or stop: unlock and unmap the WAL, close the connection and answer `stopped`.
 */
export type CheckpointWorkerMessage =
  | { path: string; intervalMs: number; residentWal: boolean }
  | { round: number }
  | { stop: true }

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
let stop = () => {}

self.onmessage = async (e: MessageEvent<CheckpointWorkerMessage>) => {
  if ('round' in e.data) return round?.(e.data.round)
  if ('stop' in e.data) {
    stop()
    return self.postMessage({ stopped: true })
  }
  const { path, intervalMs, residentWal } = e.data
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
  const rounds = setInterval(() => round?.(), intervalMs)
  const resident = residentWal ? await keepWalResident(path) : null
  const locking = resident
    ? setInterval(() => {
        const r = resident.tick()
        if ('failed' in r) {
          clearInterval(locking)
          self.postMessage({ error: `WAL not kept in memory: ${r.failed}` })
        }
      }, 20)
    : undefined
  stop = () => {
    clearInterval(rounds)
    clearInterval(locking)
    round = null
    resident?.close()
    db.close()
  }
}
