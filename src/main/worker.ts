// Cloudflare Workers entry (DESIGN: one app, two entry points): an API instance (ROLE=api) on libSQL over
// HTTP (sqld/Turso), Upstash Redis over REST (cache, leases and the bus) and R2 for files. The engine
// role runs in a Bun process on the same database and Redis (README, docs/architecture.md). Exercised
// under `wrangler dev` by tests/workers.
import { type Client, createClient } from '@libsql/client/web'
import argon2Wasm from '@phi-ag/argon2/argon2.wasm'
import { createApp } from '../kernel/app'
import { usePasswordEngine } from '../kernel/auth/passwords'
import { wasmPasswordEngine } from '../kernel/auth/passwords-wasm'
import { backlogIfAny, EDGE_FLUSH_MAX } from '../kernel/bus/backlog'
import { UpstashBus } from '../kernel/bus/upstash'
import { ResilientStore } from '../kernel/cache/resilient'
import { UpstashStore } from '../kernel/cache/upstash'
import { systemClock } from '../kernel/clock'
import { loadConfig } from '../kernel/config'
import { Db } from '../kernel/db/db'
import { FetchMeter } from '../kernel/jobs/budget'
import { scheduledHere } from '../kernel/jobs/runner'
import { createLogger } from '../kernel/logger'
import { type R2BucketLike, R2Storage } from '../kernel/storage/r2'
import { answered, asServed } from './edge-request'
import { MODULES } from './modules'
import examples from './openapi-examples.json'
import { loadBundledAsset } from './worker-assets'

interface Env extends Record<string, unknown> {
  FILES: R2BucketLike
}

interface ExecutionContext {
  waitUntil(promise: Promise<unknown>): void
}

/**
 * Settles once the tasks queued before it ran: Elysia runs its after-response hooks (the request's log
 * line) in a setImmediate of their own, which a Worker drops once the answer is out unless the request's
 * context waits for it.
 */
const queuedWork = () =>
  new Promise<void>((resolve) =>
    typeof setImmediate === 'function' ? setImmediate(resolve) : setTimeout(resolve, 0),
  )

// argon2 in WebAssembly: the module is compiled by the bundler (Workers refuse to compile it at run time)
usePasswordEngine(wasmPasswordEngine(() => WebAssembly.instantiate(argon2Wasm)))

/**
 * Every subrequest (the libSQL HTTP client, Upstash REST, the bus) through one counting fetch: a scheduled
 * run counts its own and starts a job only while its invocation has room left for it (CallBudget).
 */
const meter = new FetchMeter()
globalThis.fetch = meter.wrap(globalThis.fetch.bind(globalThis))
/**
 * A scheduled run starts no job past 700 of its 1,000 subrequests: each job's run at the edge is bounded
 * well within the 300 left (its README), so none is cut off inside a transaction.
 */
const JOBS_START_BELOW = 700

// built on the first event, not at module scope: Workers refuse random numbers there (the process origin)
let app: ReturnType<typeof createApp> | undefined

function build(env: Env) {
  const vars = Object.fromEntries(Object.entries(env).filter(([, v]) => typeof v === 'string')) as Record<
    string,
    string
  >
  // what the edge needs beyond what loadConfig checks, reported with its findings in one message
  const edgeIssues = [
    ...(vars.UPSTASH_REDIS_REST_URL && vars.UPSTASH_REDIS_REST_TOKEN
      ? []
      : ['UPSTASH_REDIS_REST_URL and UPSTASH_REDIS_REST_TOKEN: required at the edge']),
    ...(vars.DATABASE_URL && !vars.DATABASE_URL.startsWith('file:')
      ? []
      : ['DATABASE_URL: a remote libSQL (libsql:, https:, wss:) is required at the edge']),
  ].map((line) => `  ${line}`)
  let loaded: ReturnType<typeof loadConfig>
  try {
    loaded = loadConfig(vars, MODULES)
  } catch (e) {
    throw new Error([(e as Error).message, ...edgeIssues].join('\n'))
  }
  if (edgeIssues.length || loaded.cache.kind !== 'upstash')
    throw new Error(['Invalid configuration:', ...edgeIssues].join('\n'))
  // every request does its own work at the edge: no group commit across requests, never the engine
  const config = { ...loaded, groupCommit: false, role: 'api' as const }
  const cache = loaded.cache
  const logger = createLogger(config.logLevel, (line) => console.log(line))
  const client = createClient({
    url: config.database.url,
    authToken: config.database.authToken,
    intMode: 'number',
    // no queue of the client's own (it runs 20 queries at once by default): a queued query was started
    // by whichever request's query ended, and a request that ended with its query in flight (its client
    // gone, or its answer sent) never freed its place, as workerd drops what follows in an ended
    // request; 20 of those left every later query of the isolate waiting for ever. workerd bounds each
    // request's open connections itself.
    concurrency: Number.MAX_SAFE_INTEGER,
    // counted: the client may hold the fetch it found at import, before the global one was wrapped
    fetch: globalThis.fetch,
  })
  return createApp(
    {
      config,
      db: new Db(client as unknown as Client),
      store: new ResilientStore(new UpstashStore(cache.url, cache.token), logger, config.cacheTimeoutMs),
      clock: systemClock,
      logger,
      storage: new R2Storage(env.FILES),
      bus: new UpstashBus(cache.url, cache.token, logger),
      loadAsset: loadBundledAsset,
    },
    MODULES,
    // Elysia's Cloudflare adapter compiles every route with generated code, which workerd allows only
    // at start-up; the app is built on the first event (no random numbers at module scope), so it runs
    // in Elysia's dynamic mode on the Web Standard adapter (createApp's `edge`)
    { edge: true, examples },
  )
}

/** Why the app could not be built (its configuration), kept for the isolate's life: env does not change. */
let unusable: string | undefined

/** The app, or undefined after logging once why it cannot run with these settings. */
function appOf(env: Env) {
  if (app || unusable) return app
  try {
    app = build(env)
  } catch (e) {
    unusable = e instanceof Error ? e.message : String(e)
    console.error(JSON.stringify({ level: 'error', msg: 'the Worker cannot start', err: unusable }))
  }
  return app
}

export default {
  async fetch(request: Request, env: Env, ctx?: ExecutionContext) {
    const ready = appOf(env)
    if (ready) {
      // the request's work runs to its end though its client leaves: workerd drops an ended request's work,
      // and a write transaction cut between its BEGIN and its COMMIT held sqld's write lock, every other
      // writer of the deployment waiting, until sqld gave the stream up (ADR 0019: about 5 s)
      const handled = Promise.resolve(ready.fetch(asServed(request)))
      // then the staff audit's outcome written after the answer (kernel/audit), and the changes the bus
      // refused earlier sent again (kernel/bus/backlog: at the edge no timer does it)
      const after = () =>
        queuedWork().then(() =>
          Promise.all([ready.kernel.audit.settled(), backlogIfAny(ready.kernel.bus)?.flush(EDGE_FLUSH_MAX)]),
        )
      ctx?.waitUntil(handled.then(after, after))
      return answered(request, await handled)
    }
    // an operator sees what to set (names only, never values) instead of a bare 500 on every request
    return Response.json(
      {
        error: 'SERVICE_UNAVAILABLE',
        message: `the Worker is misconfigured: ${unusable?.replace(/\s+/g, ' ')}`,
      },
      { status: 503, headers: { 'retry-after': '60' } },
    )
  },
  /** Cron Triggers (wrangler.toml): the jobs that are due, each cluster job once per period (its lease). */
  scheduled(_controller: unknown, env: Env, ctx: ExecutionContext) {
    const ready = appOf(env)
    if (!ready) return
    const jobs = ready.runner
    ctx.waitUntil(
      meter
        .run(JOBS_START_BELOW, (budget) =>
          jobs.runDue(scheduledHere(ready.kernel.config.clusterJobs), budget),
        )
        .then((outcome) => console.log(JSON.stringify({ msg: 'scheduled jobs', outcome }))),
    )
  },
}
