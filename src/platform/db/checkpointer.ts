export interface CheckpointResult {
  /** 1 when another checkpoint held the lock */
  busy: number
  /** frames in the WAL */
  log: number
  /** frames copied back into the database file */
  done: number
}

export interface Checkpointer {
  /** The latest round's result (null before the first). */
  readonly last: CheckpointResult | null
  stop(): void
}

/**
 * Copies the WAL back into the database file from a worker thread. SQLite's default is that the commit
 * which grows the WAL past 1000 pages does this itself, inside the transaction that happens to cross
 * the line: under a steady stream of trade opens that was a 20-50 ms commit every few hundred ms, and
 * the slowest trade opens were exactly the requests of those batches (bench/trading.ts p99 22-29 ms,
 * 16-20 ms without). The app's connections keep a much larger automatic checkpoint as a safety net,
 * should this worker stop.
 */
export function startCheckpointer(
  path: string,
  opts: { intervalMs?: number; onError?: (message: string) => void } = {},
): Checkpointer {
  const worker = new Worker(new URL('./checkpoint-worker.ts', import.meta.url).href)
  // a background duty: it never keeps the process alive (Bun's Worker has unref; the DOM type does not)
  ;(worker as unknown as { unref(): void }).unref()
  let last: CheckpointResult | null = null
  worker.onmessage = (e: MessageEvent<CheckpointResult | { error: string }>) => {
    if ('error' in e.data) opts.onError?.(e.data.error)
    else last = e.data
  }
  worker.onerror = (e) => opts.onError?.(e.message)
  worker.postMessage({ path, intervalMs: opts.intervalMs ?? 200 })
  return {
    get last() {
      return last
    },
    stop: () => worker.terminate(),
  }
}
