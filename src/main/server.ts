import { createApp } from '../kernel/app'
import { createBus } from '../kernel/bus'
import { createStore } from '../kernel/cache'
import { type Clock, systemClock } from '../kernel/clock'
import type { Config } from '../kernel/config'
import { openDatabase } from '../kernel/db/client'
import { migrateDatabase } from '../kernel/db/migrate'
import { scheduledHere } from '../kernel/jobs/runner'
import { createLogger, type Logger } from '../kernel/logger'
import { LocalDiskStorage } from '../kernel/storage/local'
import { loadAssetFromDisk } from './assets'
import { MODULES } from './modules'
import examples from './openapi-examples.json'

/**
 * Bun's own limit on a request body: far above the app's (BODY_MAX_BYTES, UPLOAD_MAX_BYTES), so a body
 * over them reaches the app and gets its JSON 413 (past Bun's limit Bun answers a bare 413). Nothing is
 * buffered: the app refuses an announced length at once and stops reading a chunked body at its limit.
 */
const BUN_BODY_LIMIT = 2 ** 30

/** How long in-flight requests get to finish at shutdown, and each later step of it (ms). */
const DRAIN_MS = 5000
const STEP_MS = 2000

/** Waits for `work` at most `ms`; false (logged) when it did not finish in time or failed. */
async function within(logger: Logger, what: string, ms: number, work: Promise<unknown> | undefined) {
  let timer: ReturnType<typeof setTimeout> | undefined
  const outcome = await Promise.race([
    Promise.resolve(work).then(
      () => 'done' as const,
      (e: unknown) => (e instanceof Error ? e.message : String(e)),
    ),
    new Promise<'late'>((r) => {
      timer = setTimeout(() => r('late'), ms)
    }),
  ])
  clearTimeout(timer)
  if (outcome === 'done') return true
  logger.log('warn', `shutdown: not ${what}`, {
    err: outcome === 'late' ? `still running after ${ms} ms` : outcome,
  })
  return false
}

/** A setting the process cannot start with: bun.ts prints its message as one line and exits non-zero. */
export class StartupError extends Error {}

/** The URL without credentials, for the one line that names what failed. */
function redacted(url: string): string {
  return url
    .replace(/\/\/[^@/]*@/, '//<credentials>@')
    .replace(/([?&](?:authToken|auth_token)=)[^&]*/g, '$1<redacted>')
}

/**
 * Opens and migrates the database, turning whatever fails (an unreachable sqld, a missing directory, a
 * file that is not a database) into one StartupError naming DATABASE_URL and the reason.
 */
async function databaseOf(config: Config, logger: Logger) {
  let database: Awaited<ReturnType<typeof openDatabase>> | undefined
  // a transaction that waits or holds the writer's turn that long fails or is rolled back: the write path heals
  const turn = { queueTimeoutMs: config.database.writeTimeoutMs, txTimeoutMs: config.database.writeTimeoutMs }
  try {
    database = await openDatabase(config.database.url, config.database.authToken, {
      onCheckpointError: (message) => logger.log('warn', 'WAL checkpoint worker', { err: message }),
      cacheMb: config.database.cacheMb,
      busyTimeoutMs: config.database.writeTimeoutMs,
      writer: turn,
      remote: { ...turn, statementTimeoutMs: config.database.writeTimeoutMs },
    })
    await migrateDatabase(database.db)
    return database
  } catch (e) {
    database?.close()
    // the innermost cause says why (a query wrapper's message is the SQL); one line whatever it holds
    let root: unknown = e
    while (root instanceof Error && root.cause instanceof Error) root = root.cause
    const reason = (root instanceof Error ? root.message : String(root)).replace(/\s+/g, ' ').trim()
    throw new StartupError(`DATABASE_URL (${redacted(config.database.url)}): ${reason}`)
  }
}

/**
 * Everything the Bun entry does, as a function tests and benchmarks can call: open the database,
 * migrate, build the app from the module list, seed demo data outside production, load the modules'
 * in-memory state, start the jobs (the event relay among them), listen. With ROLE=all (the default) it also takes the engine
 * role when no other instance holds it, and stands by while one does.
 */
export async function startServer(config: Config, opts: { clock?: Clock; logger?: Logger } = {}) {
  const logger = opts.logger ?? createLogger(config.logLevel)
  const clock = opts.clock ?? systemClock
  const database = await databaseOf(config, logger)
  const store = createStore(config, logger, clock)
  const bus = createBus(config, logger)
  const app = createApp(
    {
      config,
      db: database.db,
      store,
      clock,
      logger,
      storage: new LocalDiskStorage(config.upload.dir),
      bus,
      loadAsset: loadAssetFromDisk,
    },
    MODULES,
    { examples },
  )
  if (config.seedDemo) {
    await app.lifecycle.seedDemo()
    logger.log('info', 'demo data in place')
  }
  await app.lifecycle.start({ standby: true })
  app.runner.start(scheduledHere(config.clusterJobs))
  app.listen({ hostname: config.host, port: config.port, maxRequestBodySize: BUN_BODY_LIMIT })
  const port = app.server?.port ?? config.port
  logger.log('info', 'listening', {
    url: `http://${config.host}:${port}`,
    env: config.env,
    cache: store.kind,
    modules: MODULES.map((m) => m.name),
  })
  return {
    app,
    port,
    /**
     * Graceful shutdown (SIGTERM), each step bounded so that a hung dependency cannot hold it: no new
     * connections, streams end (clients resume elsewhere with Last-Event-ID), in-flight requests get up
     * to DRAIN_MS to finish, then the jobs, the relay and the modules stop and the engine role is given
     * up (a standby takes it at once rather than when the lease lapses). True when every step finished.
     */
    async stop(): Promise<boolean> {
      const server = app.server
      app.lifecycle.close()
      let clean = await within(logger, 'requests drained', DRAIN_MS, server?.stop(false))
      if (!clean) server?.stop(true)
      for (const [what, step] of [
        ['background work stopped', () => app.lifecycle.stop()],
        ['bus closed', () => bus.close()],
        ['cache closed', () => store.close()],
      ] as const)
        clean = (await within(logger, what, STEP_MS, step())) && clean
      database.close()
      return clean
    },
  }
}
