import type { CheckpointWorkerMessage } from './checkpoint-worker'

interface CheckpointResult {
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
  /** Rounds that copied the whole WAL while this process held its writes back: the next write restarts it. */
  readonly restarts: number
  stop(): void
}

type Reply = (CheckpointResult | { error: string }) & { id?: number }

/**
 * Copies the WAL back into the database file from a worker thread. SQLite's default is that the commit
 * which grows the WAL past 1000 pages does this itself, inside the transaction that happens to cross
 * the line: under a steady stream of trade opens that was a 20-50 ms commit every few hundred ms, and
 * the slowest trade opens were exactly the requests of those batches (bench/trading.ts p99 22-29 ms,
 * 16-20 ms without). The app's connections keep a much larger automatic checkpoint as a safety net.
 *
 * Copying alone does not keep the WAL small: SQLite writes it from the start again only when a write
 * transaction begins on a WAL copied back completely, and under a steady stream of writes some commit
 * always lands while a round copies. The WAL then grew to the safety net (20,000 pages then), whose
 * checkpoint inside a commit waited on two fsyncs, 15-260 ms, every second or two (wrk corrects for
 * the requests a stalled client could not send, so one such stall made a p99 of 45-160 ms), and a long
 * WAL cost CPU on every commit. So once the WAL holds `restartFrames`, the round after a complete one
 * runs while `holdWrites` keeps this process's write transactions queued (they wait without blocking
 * the event loop). It has only the commits of one round to copy, and when it finishes within
 * `holdLimitMs` (two fsyncs: 7-15 ms here) the next write starts the WAL over; when it does not, the
 * writes go on (the round is PASSIVE, nothing waits on it) and a later round tries again. Another
 * process's writes are not held: its restarts may miss, and the safety net stays.
 *
 * Every restart holds a batch of writes for those two fsyncs (3.5 ms each at the median here), so
 * `restartFrames` trades WAL length for how often that happens: at 8,192 frames a stream of 12,000
 * trade opens a second (1.2 frames each) restarted 13-17 times per 10 s, at 32,768 5-8 times, and the
 * slowest 1% of commits went from 8-10 ms to 6.6-6.8 ms with no measurable cost per commit. The WAL
 * then reaches ~135 MB before it starts over.
 */
export function startCheckpointer(
  path: string,
  opts: {
    intervalMs?: number
    restartFrames?: number
    holdLimitMs?: number
    /** Runs `fn` while no write transaction of this process runs and none starts. */
    holdWrites?: (fn: () => Promise<void>) => Promise<void>
    onError?: (message: string) => void
  } = {},
): Checkpointer {
  const worker = new Worker(new URL('./checkpoint-worker.ts', import.meta.url).href)
  // a background duty: it never keeps the process alive (Bun's Worker has unref; the DOM type does not)
  ;(worker as unknown as { unref(): void }).unref()
  const post = (m: CheckpointWorkerMessage) => worker.postMessage(m)
  const restartFrames = opts.restartFrames ?? 32_768
  const holdLimitMs = opts.holdLimitMs ?? 15
  let last: CheckpointResult | null = null
  let restarts = 0
  let holding = false
  let nextId = 1
  const waiting = new Map<number, (r: Reply) => void>()

  /** A round run now; resolves with its reply, or with null once the hold limit has passed. */
  const roundWithin = (ms: number) =>
    new Promise<Reply | null>((resolve) => {
      const id = nextId++
      const timer = setTimeout(() => {
        waiting.delete(id)
        resolve(null)
      }, ms)
      waiting.set(id, (r) => {
        clearTimeout(timer)
        waiting.delete(id)
        resolve(r)
      })
      post({ round: id })
    })

  const maybeRestart = (r: CheckpointResult) => {
    if (!opts.holdWrites || holding || r.busy !== 0 || r.done !== r.log || r.log < restartFrames) return
    holding = true
    opts
      .holdWrites(async () => {
        const reply = await roundWithin(holdLimitMs)
        if (reply && !('error' in reply) && reply.busy === 0 && reply.done === reply.log) restarts++
      })
      .catch((e) => opts.onError?.(e instanceof Error ? e.message : String(e)))
      .finally(() => {
        holding = false
      })
  }

  let stopped: (() => void) | null = null
  worker.onmessage = (e: MessageEvent<Reply | { stopped: true }>) => {
    const r = e.data
    if ('stopped' in r) return stopped?.()
    if (r.id !== undefined) waiting.get(r.id)?.(r)
    if ('error' in r) return opts.onError?.(r.error)
    last = { busy: r.busy, log: r.log, done: r.done }
    // a round the writes were held for has just run; only a regular round starts a hold
    if (r.id === undefined) maybeRestart(last)
  }
  worker.onerror = (e) => opts.onError?.(e.message)
  post({ path, intervalMs: opts.intervalMs ?? 200 })
  return {
    get last() {
      return last
    },
    get restarts() {
      return restarts
    },
    /** The worker unlocks the WAL and closes its connection first; terminated after 1 s regardless. */
    stop() {
      const timer = setTimeout(() => worker.terminate(), 1000)
      stopped = () => {
        clearTimeout(timer)
        worker.terminate()
      }
      post({ stop: true })
    },
  }
}
