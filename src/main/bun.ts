import { loadConfig } from '../kernel/config'
import { startServer } from './server'

let config: ReturnType<typeof loadConfig>
try {
  config = loadConfig()
} catch (e) {
  console.error((e as Error).message)
  process.exit(1)
}
const server = await startServer(config)
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.on(signal, async () => {
    await server.stop()
    process.exit(0)
  })
