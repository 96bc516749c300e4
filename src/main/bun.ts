import { ConfigError, loadConfig } from '../kernel/config'
import { createLogger } from '../kernel/logger'
import { MODULES } from './modules'
import { guardProcess, stopOnSignals } from './process-guards'
import { StartupError, startServer } from './server'

let config: ReturnType<typeof loadConfig>
try {
  // the kernel's variables and every module's, checked at once
  config = loadConfig(process.env, MODULES)
} catch (e) {
  console.error((e as Error).message)
  process.exit(1)
}
const logger = createLogger(config.logLevel)
guardProcess(logger)
let server: Awaited<ReturnType<typeof startServer>>
try {
  server = await startServer(config, { logger })
} catch (e) {
  // one line naming the setting and the reason; anything else is a bug and keeps its stack
  console.error(e instanceof StartupError || e instanceof ConfigError ? e.message : e)
  process.exit(1)
}
stopOnSignals(server, logger)
