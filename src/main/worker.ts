// Cloudflare Workers entry (DESIGN: one app, two entry points): an API instance (ROLE=api) on libSQL over
// HTTP (sqld/Turso), Upstash Redis over REST (cache, leases and the bus) and R2 for files. The engine
// role runs in a Bun process on the same database and Redis (README, docs/architecture.md). Exercised
// under `wrangler dev` by tests/workers.
import { type Client, createClient } from '@libsql/client/web'
import argon2Wasm from '@phi-ag/argon2/argon2.wasm'
import { createApp } from '../kernel/app'
import { usePasswordEngine } from '../kernel/auth/passwords'
import { wasmPasswordEngine } from '../kernel/auth/passwords-wasm'
import { UpstashBus } from '../kernel/bus/upstash'
import { ResilientStore } from '../kernel/cache/resilient'
import { UpstashStore } from '../kernel/cache/upstash'
import { systemClock } from '../kernel/clock'
import { loadConfig } from '../kernel/config'
import { Db } from '../kernel/db/db'
import { createLogger } from '../kernel/logger'
import { type R2BucketLike, R2Storage } from '../kernel/storage/r2'
import { MODULES } from './modules'
import { loadBundledAsset } from './worker-assets'

interface Env extends Record<string, unknown> {
  FILES: R2BucketLike
}

interface ScheduledContext {
  waitUntil(promise: Promise<unknown>): void
}

// argon2 in WebAssembly: the module is compiled by the bundler (Workers refuse to compile it at run time)
usePasswordEngine(wasmPasswordEngine(() => WebAssembly.instantiate(argon2Wasm)))

// built on the first event, not at module scope: Workers refuse random numbers there (the process origin)
let app: ReturnType<typeof createApp> | undefined

function build(env: Env) {
  const vars = Object.fromEntries(Object.entries(env).filter(([, v]) => typeof v === 'string')) as Record<
    string,
    string
  >
  // every request does its own work at the edge: no group commit across requests, never the engine
  const config = { ...loadConfig(vars), groupCommit: false, role: 'api' as const }
  if (config.cache.kind !== 'upstash') throw new Error('the edge entry needs UPSTASH_REDIS_REST_URL/_TOKEN')
  const logger = createLogger(config.logLevel, (line) => console.log(line))
  const client = createClient({
    url: config.database.url,
    authToken: config.database.authToken,
    intMode: 'number',
  })
  return createApp(
    {
      config,
      db: new Db(client as unknown as Client),
      store: new ResilientStore(
        new UpstashStore(config.cache.url, config.cache.token),
        logger,
        config.cacheTimeoutMs,
      ),
      clock: systemClock,
      logger,
      storage: new R2Storage(env.FILES),
      bus: new UpstashBus(config.cache.url, config.cache.token, logger),
      loadAsset: loadBundledAsset,
    },
    MODULES,
    // Elysia's Cloudflare adapter compiles every route with generated code, which workerd allows only
    // at start-up; the app is built on the first event (no random numbers at module scope), so it runs
    // in Elysia's dynamic mode on the Web Standard adapter (createApp's `edge`)
    { edge: true },
  )
}

export default {
  fetch(request: Request, env: Env) {
    app ??= build(env)
    return app.fetch(request)
  },
  /** Cron Triggers (wrangler.toml): the jobs that are due, each cluster job once per period (its lease). */
  scheduled(_controller: unknown, env: Env, ctx: ScheduledContext) {
    app ??= build(env)
    const jobs = app.runner
    ctx.waitUntil(
      jobs.runDue().then((outcome) => console.log(JSON.stringify({ msg: 'scheduled jobs', outcome }))),
    )
  },
}
