// A real server process for tests that need a real socket or a real restart: the environment configures
// it (DATABASE_URL, UPLOAD_DIR, ...), it listens on a free loopback port and prints READY <url>. SIGTERM
// stops it gracefully; the test that spawned it owns the database directory. Like the Bun entry, it logs
// an unhandled rejection instead of dying of it (the fault suite looks for those lines).
import { loadConfig } from '../../src/kernel/config'
import { createLogger } from '../../src/kernel/logger'
import { guardProcess, stopOnSignals } from '../../src/main/process-guards'
import { startServer } from '../../src/main/server'

const config = loadConfig({ ...process.env, HOST: '127.0.0.1', PORT: '0' })
const logger = createLogger(config.logLevel)
guardProcess(logger)
const server = await startServer(config, { logger })
// the instance (orders.origin, the relay's lease owner) after the address: a test kills the one at work
console.log(`READY http://127.0.0.1:${server.port} ${server.app.kernel.origin}`)
stopOnSignals(server, logger)
