import { type RedisServer, startRedis } from './redis'
import { type RealServer, serverDir, startRealServer } from './server'
import { type SqldServer, startSqld } from './sqld'
import { startUpstashBridge } from './upstash-bridge'
import { startWranglerDev, type WranglerDev } from './wrangler'

export interface EdgeShape {
  sqld: SqldServer
  redis: RedisServer
  /** the Bun engine: it seeds the demo (passwords hashed by Bun), runs triggers and relay consumers */
  engine: RealServer
  /** the Workers entry under `wrangler dev`, on the same sqld and Redis (over the Upstash REST bridge) */
  worker: WranglerDev
  /** a scratch directory of the run */
  dir: string
  stop(): Promise<void>
}

/**
 * The Workers entry as an API instance beside a Bun engine, on one real sqld and one real redis-server
 * (the Worker speaks Upstash REST to it through the bridge). `shared` goes to both sides (secrets, the
 * simulator), `engine` and `worker` to one side each.
 */
export async function startEdgeShape(env: {
  shared: Record<string, string>
  engine?: Record<string, string>
  worker?: Record<string, string>
}): Promise<EdgeShape> {
  const [sqld, redis] = await Promise.all([startSqld(), startRedis()])
  const bridge = startUpstashBridge(redis.url, 'bridge-token')
  const home = serverDir()
  let engine: RealServer | undefined
  let worker: WranglerDev | undefined
  const stop = async () => {
    await worker?.stop()
    await engine?.stop()
    bridge.stop()
    await Promise.all([sqld.stop(), redis.stop()])
    home.remove()
  }
  try {
    engine = await startRealServer(home.dir, {
      ...env.shared,
      DATABASE_URL: sqld.url,
      REDIS_URL: redis.url,
      ROLE: 'engine',
      ...env.engine,
    })
    await engine.waitForOutput(/engine role taken/)
    worker = await startWranglerDev({
      ...env.shared,
      APP_ENV: 'test',
      SEED_DEMO: '0',
      DATABASE_URL: sqld.url,
      UPSTASH_REDIS_REST_URL: bridge.url,
      UPSTASH_REDIS_REST_TOKEN: 'bridge-token',
      ...env.worker,
    })
  } catch (e) {
    await stop()
    throw e
  }
  return { sqld, redis, engine, worker, dir: home.dir, stop }
}
