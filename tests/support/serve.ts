// A real server process for tests that need a real socket or a real restart: the environment configures
// it (DATABASE_URL, UPLOAD_DIR, ...), it listens on a free loopback port and prints READY <url>. SIGTERM
// stops it gracefully; the test that spawned it owns the database directory.
import { loadConfig } from '../../src/kernel/config'
import { startServer } from '../../src/main/server'

const server = await startServer(loadConfig({ ...process.env, HOST: '127.0.0.1', PORT: '0' }))
console.log(`READY http://127.0.0.1:${server.port}`)
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.on(signal, async () => {
    await server.stop()
    process.exit(0)
  })
