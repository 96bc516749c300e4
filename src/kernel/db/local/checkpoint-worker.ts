// Worker thread of src/kernel/db/local/checkpointer.ts: its own connection copies the WAL back into the
// database file (PASSIVE: never waits for, nor blocks, the readers and the writer).
import Database from 'libsql'

declare const self: Worker

/** Start (path, interval), run one round now and answer it with its id, or stop: close and answer `stopped`. */
export type CheckpointWorkerMessage =
  | { path: string; intervalMs: number }
  | { round: number }
  | { stop: true }

let round: ((id?: number) => void) | null = null
let stop = () => {}

self.onmessage = async (e: MessageEvent<CheckpointWorkerMessage>) => {
  if ('round' in e.data) return round?.(e.data.round)
  if ('stop' in e.data) {
    stop()
    return self.postMessage({ stopped: true })
  }
  const { path, intervalMs } = e.data
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
  stop = () => {
    clearInterval(rounds)
    round = null
    db.close()
  }
}
