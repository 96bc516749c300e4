import { createApp } from '../app'
import type { Config } from '../config'
import { createStore } from '../kernel/cache'
import { type Clock, systemClock } from '../kernel/clock'
import { openDatabase } from '../kernel/db/client'
import { migrateDatabase } from '../kernel/db/migrate'
import { createLogger, type Logger } from '../kernel/logger'
import { lockMemory } from '../kernel/memory-lock'
import { LocalDiskStorage } from '../kernel/storage/local'
import { startTradingLoops } from '../modules/trading/background'
import { seedDemo } from '../seed/demo'
import { loadAssetFromDisk } from './assets'

/**
 * Everything the Bun entry does, as a function tests and benchmarks can call: open the database,
 * migrate, build the app, seed demo data outside production, listen.
 */
export async function startServer(config: Config, opts: { clock?: Clock; logger?: Logger } = {}) {
  const logger = opts.logger ?? createLogger(config.logLevel)
  const clock = opts.clock ?? systemClock
  if (config.memoryLock === 'all') {
    const lock = await lockMemory()
    if (!lock.locked) logger.log('warn', 'process memory not locked', { reason: lock.reason })
  }
  const database = await openDatabase(config.database.url, config.database.authToken, {
    onCheckpointError: (message) => logger.log('warn', 'WAL checkpoint worker', { err: message }),
    cacheMb: config.database.cacheMb,
    residentWal: config.memoryLock !== 'off',
  })
  await migrateDatabase(database.db)
  const store = createStore(config, logger, clock)
  const app = createApp({
    config,
    db: database.db,
    store,
    clock,
    logger,
    storage: new LocalDiskStorage(config.upload.dir),
    loadAsset: loadAssetFromDisk,
  })
  if (config.seedDemo && (await seedDemo(app.ctx))) logger.log('info', 'demo data seeded')
  const loops = await startTradingLoops(app.ctx)
  app.listen({
    hostname: config.host,
    port: config.port,
    maxRequestBodySize: config.upload.maxBytes + 1024 * 1024,
  })
  const port = app.server?.port ?? config.port
  logger.log('info', 'listening', {
    url: `http://${config.host}:${port}`,
    env: config.env,
    cache: store.kind,
  })
  return {
    app,
    port,
    async stop() {
      await app.stop()
      await loops.stop()
      await store.close()
      database.close()
    },
  }
}
