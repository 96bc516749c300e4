// `npm run dev:edge`: the Workers entry locally in one command. It starts what the Worker needs on
// loopback (a real sqld, a real redis-server and the Upstash REST bridge in front of it), a Bun engine
// (ROLE=engine: migrations, demo data, simulated quotes, triggers) on the same database and Redis, and
// `wrangler dev` (workerd) with development settings, then prints the URL. Ctrl-C stops everything it
// started, by process id. EDGE_PORT picks the Worker's port (default 8787).
import { randomBytes } from 'node:crypto'
import { startRedis } from '../tests/support/redis'
import { serverDir, startRealServer } from '../tests/support/server'
import { startSqld } from '../tests/support/sqld'
import { startUpstashBridge } from '../tests/support/upstash-bridge'
import { startWranglerDev } from '../tests/support/wrangler'

if (!Bun.which('redis-server')) {
  console.error('dev:edge needs redis-server (Debian/Ubuntu: apt-get install -y redis-server)')
  process.exit(1)
}

const port = Number(process.env.EDGE_PORT ?? 8787)
// one development secret per run, shared by the engine and the Worker (tokens do not outlive the run)
const secret = randomBytes(32).toString('hex')
const bridgeToken = randomBytes(16).toString('hex')
const step = (what: string) => console.log(`dev:edge: ${what}`)

step('starting sqld and redis-server')
const [sqld, redis] = await Promise.all([startSqld(), startRedis()])
const bridge = startUpstashBridge(redis.url, bridgeToken)
const home = serverDir()
step('starting the engine (migrations, demo data, simulated quotes)')
const engine = await startRealServer(home.dir, {
  APP_ENV: 'development',
  DATABASE_URL: sqld.url,
  REDIS_URL: redis.url,
  ROLE: 'engine',
  JWT_SECRET: secret,
  SEED_DEMO: '1',
  SEED_HISTORY: '1',
  QUOTE_SIMULATOR: '1',
  LOG_LEVEL: 'warn',
})
step('starting wrangler dev (workerd)')
const worker = await startWranglerDev(
  {
    APP_ENV: 'development',
    SEED_DEMO: '0',
    QUOTE_SIMULATOR: '0',
    JWT_SECRET: secret,
    DATABASE_URL: sqld.url,
    UPSTASH_REDIS_REST_URL: bridge.url,
    UPSTASH_REDIS_REST_TOKEN: bridgeToken,
    LOG_LEVEL: 'info',
  },
  { port },
)

console.log(`
The Worker is at ${worker.url}  (Swagger UI: ${worker.url}/swagger)
  engine (Bun):   ${engine.url}
  sqld:           ${sqld.url}
  demo accounts:  as in the README (e.g. login 100001, password demo-pass-1)
Ctrl-C stops everything.`)

// the Worker's request lines, as they come
let shown = worker.output().length
const tail = setInterval(() => {
  const text = worker.output()
  if (text.length > shown) process.stdout.write(text.slice(shown))
  shown = text.length
}, 250)

let stopping = false
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.on(signal, async () => {
    if (stopping) return
    stopping = true
    clearInterval(tail)
    step('stopping')
    await worker.stop()
    await engine.stop()
    bridge.stop()
    await Promise.all([sqld.stop(), redis.stop()])
    home.remove()
    process.exit(0)
  })
