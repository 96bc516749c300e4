import type { Logger } from '../kernel/logger'

/**
 * The last line of defence of a long-lived process: a rejection nobody handled or an exception nobody
 * caught is a bug, logged with its stack as `unhandled rejection` / `uncaught exception` (the fault suite
 * fails on either line), and the process keeps serving instead of dying of one background failure.
 */
export function guardProcess(logger: Logger) {
  const detail = (e: unknown) => ({
    err: e instanceof Error ? `${e.name}: ${e.message}` : String(e),
    code: (e as { code?: unknown } | null)?.code,
    stack: e instanceof Error ? e.stack : undefined,
  })
  process.on('unhandledRejection', (reason) => logger.log('error', 'unhandled rejection', detail(reason)))
  process.on('uncaughtException', (err) => logger.log('error', 'uncaught exception', detail(err)))
}
