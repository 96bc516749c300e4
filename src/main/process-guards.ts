import { rootMessage, stackFrames } from '../kernel/db/errors'
import type { Logger } from '../kernel/logger'

/**
 * The last line of defence of a long-lived process: a rejection nobody handled or an exception nobody
 * caught is a bug, logged with its stack as `unhandled rejection` / `uncaught exception` (the fault suite
 * fails on either line), and the process keeps serving instead of dying of one background failure.
 */
export function guardProcess(logger: Logger) {
  // the root cause's message and the frames, never a failed query's text (its parameters: a password hash)
  const detail = (e: unknown) => ({
    err: e instanceof Error ? `${e.name}: ${rootMessage(e)}` : String(e),
    code: (e as { code?: unknown } | null)?.code,
    stack: e instanceof Error ? stackFrames(e) : undefined,
  })
  process.on('unhandledRejection', (reason) => logger.log('error', 'unhandled rejection', detail(reason)))
  process.on('uncaughtException', (err) => logger.log('error', 'uncaught exception', detail(err)))
}

/** However a step of the shutdown hangs, the process is gone by then (ms): an orchestrator's grace is 10 s. */
const SHUTDOWN_DEADLINE_MS = 9000

/**
 * SIGTERM and SIGINT stop the server gracefully (server.ts stop: drain, end streams, give up the engine
 * role) and exit 0; a step that failed or timed out exits 1; past the deadline the process exits anyway
 * (a database call that never answers cannot hold a rolling deploy).
 */
export function stopOnSignals(server: { stop(): Promise<boolean> }, logger: Logger) {
  let stopping = false
  for (const signal of ['SIGINT', 'SIGTERM'] as const)
    process.on(signal, async () => {
      if (stopping) return
      stopping = true
      logger.log('info', 'shutting down', { signal })
      setTimeout(() => {
        logger.log('error', 'shutdown forced', { after_ms: SHUTDOWN_DEADLINE_MS })
        process.exit(1)
      }, SHUTDOWN_DEADLINE_MS).unref()
      const clean = await server.stop().catch(() => false)
      logger.log(clean ? 'info' : 'warn', 'stopped', { clean })
      process.exit(clean ? 0 : 1)
    })
}
