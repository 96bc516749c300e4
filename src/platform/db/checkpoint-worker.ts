// Worker thread of src/platform/db/checkpointer.ts: its own connection copies the WAL back into the
// database file (PASSIVE: never waits for, nor blocks, the readers and the writer).
import Database from 'libsql'

declare const self: Worker

self.onmessage = (e: MessageEvent<{ path: string; intervalMs: number }>) => {
  const { path, intervalMs } = e.data
  const db = new Database(path)
  db.exec('PRAGMA busy_timeout = 0')
  const checkpoint = db.prepare('PRAGMA wal_checkpoint(PASSIVE)')
  setInterval(() => {
    try {
      const [busy, log, done] = checkpoint.raw(true).get() as [number, number, number]
      self.postMessage({ busy, log, done })
    } catch (err) {
      // SQLITE_BUSY while the app's own safety-net checkpoint runs: the next round catches up
      self.postMessage({ error: err instanceof Error ? err.message : String(err) })
    }
  }, intervalMs)
}
