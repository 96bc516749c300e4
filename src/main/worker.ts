// Cloudflare Workers entry (DESIGN: one app, two entry points). libSQL over HTTP (sqld/Turso), Upstash
// Redis over REST, R2 for files. Minimal until the edge issue: it is type-checked with the rest of the
// code but not yet exercised under workerd (passwords still use Bun.password there, see README).
import { createClient } from '@libsql/client/web'
import { drizzle } from 'drizzle-orm/libsql'
import { CloudflareAdapter } from 'elysia/adapter/cloudflare-worker'
import { createApp } from '../app'
import { loadConfig } from '../config'
import { ResilientStore } from '../kernel/cache/resilient'
import { UpstashStore } from '../kernel/cache/upstash'
import { systemClock } from '../kernel/clock'
import type { Db } from '../kernel/db/client'
import * as schema from '../kernel/db/schema'
import { createLogger } from '../kernel/logger'
import { type R2BucketLike, R2Storage } from '../kernel/storage/r2'

interface Env extends Record<string, unknown> {
  FILES: R2BucketLike
}

let app: ReturnType<typeof createApp> | undefined

function build(env: Env) {
  const vars = Object.fromEntries(Object.entries(env).filter(([, v]) => typeof v === 'string')) as Record<
    string,
    string
  >
  const config = loadConfig(vars)
  if (config.cache.kind !== 'upstash') throw new Error('the edge entry needs UPSTASH_REDIS_REST_URL/_TOKEN')
  const logger = createLogger(config.logLevel, (line) => console.log(line))
  const client = createClient({
    url: config.database.url,
    authToken: config.database.authToken,
    intMode: 'number',
  })
  const instance = createApp(
    {
      config,
      db: drizzle(client, { schema }) as unknown as Db,
      store: new ResilientStore(
        new UpstashStore(config.cache.url, config.cache.token),
        logger,
        config.cacheTimeoutMs,
      ),
      clock: systemClock,
      logger,
      storage: new R2Storage(env.FILES),
      loadAsset: async () => null,
    },
    { adapter: CloudflareAdapter },
  )
  return instance.compile()
}

export default {
  fetch(request: Request, env: Env) {
    app ??= build(env)
    return app.fetch(request)
  },
}
