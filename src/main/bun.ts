import { loadConfig } from '../kernel/config'
import { createLogger } from '../kernel/logger'
import { guardProcess, stopOnSignals } from './process-guards'
import { startServer } from './server'

let config: ReturnType<typeof loadConfig>
try {
  config = loadConfig()
} catch (e) {
  console.error((e as Error).message)
  process.exit(1)
}
const logger = createLogger(config.logLevel)
guardProcess(logger)
const server = await startServer(config, { logger })
stopOnSignals(server, logger)
