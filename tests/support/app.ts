import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createApp } from '../../src/kernel/app'
import { LocalBus } from '../../src/kernel/bus/local'
import type { KeyValueStore } from '../../src/kernel/cache'
import { MemoryStore } from '../../src/kernel/cache/memory'
import { type Clock, systemClock } from '../../src/kernel/clock'
import { type Config, loadConfig } from '../../src/kernel/config'
import { openDatabase } from '../../src/kernel/db/client'
import { migrateDatabase } from '../../src/kernel/db/migrate'
import { type Logger, silentLogger } from '../../src/kernel/logger'
import type { ModuleDefinition } from '../../src/kernel/module'
import { LocalDiskStorage } from '../../src/kernel/storage/local'
import { loadAssetFromDisk } from '../../src/main/assets'
import { MODULES } from '../../src/main/modules'
import { startSqld } from './sqld'

export interface TestAppOptions {
  env?: Record<string, string>
  store?: KeyValueStore
  clock?: Clock
  logger?: Logger
  seed?: boolean
  /** Modules added after the product's own (tests of the kernel plug in consumers and jobs this way). */
  modules?: ModuleDefinition[]
  /** The document's success examples (the servers' own: src/main/openapi-examples.json). */
  examples?: Record<string, unknown>
}

export type TestApp = Awaited<ReturnType<typeof makeTestApp>>

/** The real app on a fresh libSQL file in a temp dir (or a fresh sqld), demo data seeded, requests through app.handle. */
export async function makeTestApp(opts: TestAppOptions = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'tcs-test-'))
  // TEST_DATABASE=sqld: the same suites on a real libSQL server (scripts/test.sh runs them both ways)
  const sqld = process.env.TEST_DATABASE === 'sqld' ? await startSqld() : null
  const config: Config = loadConfig({
    APP_ENV: 'test',
    DATABASE_URL: sqld ? sqld.url : `file:${join(dir, 'test.db')}`,
    UPLOAD_DIR: join(dir, 'uploads'),
    LOG_LEVEL: 'silent',
    // Candle history costs seconds per file; the market tests turn it on.
    SEED_HISTORY: '0',
    QUOTE_SIMULATOR: '0',
    // the demo's forex trades at weekends too: no test depends on the day it runs
    DEMO_WEEKEND_TRADING: '1',
    // in-process requests all come from one address ('unknown'): the per-address limits are tested with
    // their own values (tests/integration/hardening.test.ts)
    SIGNIN_MAX_FAILURES_PER_IP: '100000',
    REGISTER_MAX_PER_HOUR: '100000',
    ACCOUNT_OPEN_MAX_PER_DAY: '100000',
    ...opts.env,
  })
  const database = await openDatabase(config.database.url)
  await migrateDatabase(database.db)
  const clock = opts.clock ?? systemClock
  const store = opts.store ?? new MemoryStore(clock)
  const app = createApp(
    {
      config,
      db: database.db,
      store,
      clock,
      logger: opts.logger ?? silentLogger,
      storage: new LocalDiskStorage(config.upload.dir),
      bus: new LocalBus(),
      loadAsset: loadAssetFromDisk,
    },
    [...MODULES, ...(opts.modules ?? [])],
    { examples: opts.examples },
  )
  if (opts.seed !== false) {
    await app.lifecycle.seedDemo()
    // the market module gives the demo accounts their watch lists (a consumer of account.created)
    await app.relay.drain()
  }
  await app.lifecycle.start()

  async function request(
    method: string,
    path: string,
    o: {
      body?: unknown
      token?: string
      host?: string
      headers?: Record<string, string>
      form?: FormData
    } = {},
  ) {
    const headers: Record<string, string> = { host: o.host ?? 'localhost', ...o.headers }
    if (o.token) headers.authorization = o.token
    let body: BodyInit | undefined
    if (o.form) body = o.form
    else if (o.body !== undefined) {
      body = typeof o.body === 'string' ? o.body : JSON.stringify(o.body)
      headers['content-type'] ??= 'application/json'
    }
    const res = await app.handle(new Request(`http://${headers.host}${path}`, { method, headers, body }))
    const text = await res.text()
    let json: any
    try {
      json = text ? JSON.parse(text) : undefined
    } catch {
      json = undefined
    }
    return { status: res.status, headers: res.headers, json, text }
  }

  async function token(path: string, body: unknown, host = 'localhost') {
    const r = await request('POST', path, { body, host })
    if (r.status !== 200) throw new Error(`sign-in ${path} failed: ${r.status} ${r.text}`)
    return r.json.__token as string
  }

  return {
    app,
    /** The kernel (db, store, clock, events, ...). */
    ctx: app.kernel,
    ports: app.kernel.ports,
    /** Runs a job now (e.g. `trading.rollover`, `alerts.sync`), as the cron route does. */
    runJob: async (name: string) => {
      const r = await app.runner.runOnce(name)
      if (!r.ran) throw new Error(`job ${name} did not run: ${r.reason}`)
    },
    /** Delivers the events written so far to their consumers (notifications are written by consumers). */
    settle: () => app.relay.drain(),
    config,
    request,
    userToken: (login = 100001, password = 'demo-pass-1', host = 'localhost') =>
      token('/sign/in', { login, password }, host),
    customerToken: (email = 'demo@example.com', password = 'demo-pass-1', host = 'localhost') =>
      token('/customer/sign/in', { email, password }, host),
    staffToken: (login = 1, password = 'manager-pass-1') => token('/manager/sign/in', { login, password }),
    async close() {
      await app.lifecycle.stop()
      await app.kernel.store.close()
      database.close()
      await sqld?.stop()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

export { systemClock }
