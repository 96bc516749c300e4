// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
// Findings of a hostile probe of price alerts: a repeat alert re-armed by the resync reading the engine's
// own firing (it fired again for the same episode), and alerts firing on a disabled account.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { and, eq } from 'drizzle-orm'
import { createApp } from '../../src/kernel/app'
import { LocalBus } from '../../src/kernel/bus/local'
import { MemoryStore } from '../../src/kernel/cache/memory'
import { ManualClock } from '../../src/kernel/clock'
import { loadConfig } from '../../src/kernel/config'
import { openDatabase } from '../../src/kernel/db/client'
import { migrateDatabase } from '../../src/kernel/db/migrate'
import { outbox } from '../../src/kernel/events/schema'
import { silentLogger } from '../../src/kernel/logger'
import { LocalDiskStorage } from '../../src/kernel/storage/local'
import { loadAssetFromDisk } from '../../src/main/assets'
import { MODULES } from '../../src/main/modules'
import { REPEAT_REST_S } from '../../src/modules/alerts/domain/conditions'
import { priceAlerts } from '../../src/modules/alerts/schema'
import { makeTestApp, type TestApp } from '../support/app'
import { quoteIngest } from '../support/quotes'
import { startSqld } from '../support/sqld'

const REST_MS = REPEAT_REST_S * 1000
const ABOVE = { symbol: 'EURUSD', side: 0, condition: 0, target_price: 1.2, repeat_mode: 1 }
const tick = (p: number) => [{ symbol: 'EURUSD', bid: p, ask: Math.round((p + 0.0001) * 1e5) / 1e5 }]

type Db = TestApp['ctx']['db']
const alertRow = async (db: Db, id: number) =>
  (await db.select().from(priceAlerts).where(eq(priceAlerts.id, id)))[0]
/** alert.fired events written for one alert (its notifications come from them). */
async function firedEvents(db: Db, id: number) {
  const rows = await db.select().from(outbox).where(eq(outbox.topic, 'alert.fired'))
  return rows.filter((r) => (JSON.parse(r.payload as string) as { alert_id: number }).alert_id === id).length
}

/** Runs `meanwhile` once, right after the next unit of work of `app` commits (before its caller goes on). */
function afterNextCommit(uow: TestApp['ctx']['uow'], meanwhile: () => Promise<unknown>) {
  const run = uow.run
  uow.run = (async (...args: Parameters<typeof run>) => {
    uow.run = run
    const r = await run.apply(uow, args)
    await meanwhile()
    return r
  }) as typeof uow.run
  return () => {
    uow.run = run
  }
}

describe('one app (both roles)', () => {
  const clock = new ManualClock(Date.UTC(2026, 0, 5, 12, 0, 0))
  let t: TestApp
  let user: string
  let dealer: string
  let manager: string
  const ingest = quoteIngest(
    () => t,
    clock,
    () => dealer,
  )
  const bids = async (...ps: number[]) => {
    for (const p of ps) await ingest(tick(p))
  }
  const create = async (body: Record<string, unknown>, token = user) => {
    const r = await t.request('POST', '/price_alert', { token, body: { login: 100001, ...body } })
    expect(r.status).toBe(200)
    return r.json.id as number
  }
  const fired = async (id: number) => (await alertRow(t.ctx.db, id)).firedCount

  beforeAll(async () => {
    t = await makeTestApp({ clock })
    user = await t.userToken()
    dealer = await t.staffToken(3, 'dealer-pass-1')
    manager = await t.staffToken(1, 'manager-pass-1')
    await bids(1.1)
  })
  afterAll(() => t.close())

  test('the resync reading a firing before the engine recorded it: the repeat alert keeps waiting for its reset', async () => {
    await bids(1.1)
    const id = await create(ABOVE)
    // the 2 s resync job runs after the firing commits, before the engine's own bookkeeping
    const undo = afterNextCommit(t.ctx.uow, () => t.runJob('alerts.sync'))
    try {
      await bids(1.21)
    } finally {
      undo()
    }
    expect(await fired(id)).toBe(1)
    // still above, long after the rest: the same episode, no second firing
    clock.advance(REST_MS)
    await bids(1.22, 1.23)
    await t.runJob('alerts.sync')
    await bids(1.24)
    expect(await fired(id)).toBe(1)
    // a new episode fires
    await bids(1.19, 1.21)
    expect(await fired(id)).toBe(2)
    expect(await firedEvents(t.ctx.db, id)).toBe(2)
    await t.request('DELETE', `/price_alert/${id}`, { token: user })
  })

  test('ticks and the resync running side by side: each alert fires once per episode', async () => {
    let stop = false
    const sync = (async () => {
      while (!stop) {
        await t.app.runner.runOnce('alerts.sync')
        await new Promise((r) => setTimeout(r, 0))
      }
    })()
    const ids: number[] = []
    try {
      for (let i = 0; i < 8; i++) {
        await bids(1.1)
        const batch = await Promise.all(Array.from({ length: 4 }, () => create(ABOVE)))
        ids.push(...batch)
        await bids(1.21)
        clock.advance(REST_MS)
        await bids(1.22, 1.23)
        for (const id of batch) await t.request('DELETE', `/price_alert/${id}`, { token: user })
      }
    } finally {
      stop = true
      await sync
    }
    const counts = await Promise.all(ids.map((id) => firedEvents(t.ctx.db, id)))
    expect(counts.filter((n) => n !== 1)).toEqual([])
  })

  test('an edit of what the alert watches re-arms it; reading it back or a new message does not', async () => {
    await bids(1.1)
    const id = await create(ABOVE)
    await bids(1.21)
    expect(await fired(id)).toBe(1)
    clock.advance(REST_MS)
    // read back by the resync: the same alert, still waiting for its reset
    await t.runJob('alerts.sync')
    await bids(1.215)
    expect(await fired(id)).toBe(1)
    // a new message: the same alert watching the same level, still waiting
    const note = await t.request('PUT', `/price_alert/${id}`, {
      token: user,
      body: { login: 100001, ...ABOVE, message: 'still above' },
    })
    expect(note.status).toBe(200)
    await bids(1.216)
    expect(await fired(id)).toBe(1)
    // a new level, already reached: a new alert, armed
    const put = await t.request('PUT', `/price_alert/${id}`, {
      token: user,
      body: { login: 100001, ...ABOVE, target_price: 1.205 },
    })
    expect(put.status).toBe(200)
    await bids(1.217)
    expect(await fired(id)).toBe(2)
    await t.request('DELETE', `/price_alert/${id}`, { token: user })
  })

  test('a new message committed while a firing is written: that firing is not written, the next tick fires', async () => {
    await bids(1.1)
    const id = await create({ symbol: 'EURUSD', side: 0, condition: 0, target_price: 1.2 })
    const uow = t.ctx.uow
    const run = uow.run
    uow.run = (async (...args: Parameters<typeof run>) => {
      uow.run = run
      const put = await t.request('PUT', `/price_alert/${id}`, {
        token: user,
        body: { login: 100001, symbol: 'EURUSD', side: 0, condition: 0, target_price: 1.2, message: 'x' },
      })
      expect(put.status).toBe(200)
      return run.apply(uow, args)
    }) as typeof uow.run
    try {
      await bids(1.21)
    } finally {
      uow.run = run
    }
    expect(await alertRow(t.ctx.db, id)).toMatchObject({ active: 1, firedCount: 0, message: 'x' })
    await bids(1.22)
    expect(await alertRow(t.ctx.db, id)).toMatchObject({ active: 0, firedCount: 1, lastPrice: 1.22 })
    expect(await firedEvents(t.ctx.db, id)).toBe(1)
  })

  test('a disabled account: its alerts do not fire and stay; no alert is created on it; enabled, they fire', async () => {
    await bids(1.1)
    const once = await create({ symbol: 'EURUSD', side: 0, condition: 0, target_price: 1.2 })
    const other = await create({ symbol: 'EURUSD', side: 0, condition: 1, target_price: 1.05 })
    const patch = (enable: number) =>
      t.request('PATCH', '/manager/accounts/100001', { token: manager, body: { enable } })
    expect((await patch(0)).status).toBe(200)
    await t.settle()
    await bids(1.21, 1.22)
    expect(await alertRow(t.ctx.db, once)).toMatchObject({ active: 1, firedCount: 0 })
    expect(await firedEvents(t.ctx.db, once)).toBe(0)
    // nor after the engine starts again (a restart, a takeover) while the account is disabled
    await t.app.lifecycle.stop()
    await t.app.lifecycle.start()
    await bids(1.23)
    expect(await alertRow(t.ctx.db, once)).toMatchObject({ active: 1, firedCount: 0 })
    // staff may not create or re-arm one on it (the account may not act); disabling one stays open
    const made = await t.request('POST', '/price_alert', {
      token: manager,
      body: { login: 100001, symbol: 'EURUSD', side: 0, condition: 0, target_price: 1.3 },
    })
    expect([made.status, made.json.error]).toEqual([403, 'ACCOUNT_DISABLED'])
    const body = { login: 100001, symbol: 'EURUSD', side: 0, condition: 1, target_price: 1.05 }
    const rearm = await t.request('PUT', `/price_alert/${other}`, { token: manager, body })
    expect([rearm.status, rearm.json.error]).toEqual([403, 'ACCOUNT_DISABLED'])
    const off = await t.request('PUT', `/price_alert/${other}`, {
      token: manager,
      body: { ...body, active: 0 },
    })
    expect(off.status).toBe(200)
    // enabled again: the kept alert fires on the next tick past its level
    expect((await patch(1)).status).toBe(200)
    await t.settle()
    await bids(1.24)
    expect(await alertRow(t.ctx.db, once)).toMatchObject({ active: 0, firedCount: 1 })
    expect(await firedEvents(t.ctx.db, once)).toBe(1)
    user = await t.userToken()
    await t.request('DELETE', `/price_alert/${other}`, { token: user })
  })
})

/**
 * The engine (ROLE=engine) and an API instance (ROLE=api) on one database (a sqld of their own with
 * TEST_DATABASE=sqld, each with its own connection), one bus and one shared cache: alerts are written
 * through the API instance and reach the engine through the bus and the resync.
 */
async function twoInstances(clock: ManualClock) {
  const dir = mkdtempSync(join(tmpdir(), 'tcs-alerts-'))
  const sqld = process.env.TEST_DATABASE === 'sqld' ? await startSqld() : null
  const url = sqld ? sqld.url : `file:${join(dir, 'test.db')}`
  const config = (role: string) =>
    loadConfig({
      APP_ENV: 'test',
      DATABASE_URL: url,
      UPLOAD_DIR: join(dir, 'uploads'),
      LOG_LEVEL: 'silent',
      SEED_HISTORY: '0',
      QUOTE_SIMULATOR: '0',
      DEMO_WEEKEND_TRADING: '1',
      ROLE: role,
    })
  const engineDb = await openDatabase(url)
  await migrateDatabase(engineDb.db)
  // a local file is one process's to write: the API instance shares the engine's connection there
  const apiDb = sqld ? await openDatabase(url) : engineDb
  const bus = new LocalBus()
  const store = new MemoryStore(clock)
  const make = (role: string, database: typeof engineDb) => {
    const c = config(role)
    return createApp(
      {
        config: c,
        db: database.db,
        store,
        clock,
        logger: silentLogger,
        storage: new LocalDiskStorage(c.upload.dir),
        bus,
        loadAsset: loadAssetFromDisk,
      },
      MODULES,
    )
  }
  const engine = make('engine', engineDb)
  const api = make('api', apiDb)
  await engine.lifecycle.seedDemo()
  await engine.relay.drain()
  await engine.lifecycle.start()
  await api.lifecycle.start()
  expect(engine.kernel.engine.isLeader).toBe(true)
  expect(api.kernel.engine.isLeader).toBe(false)
  const request = async (method: string, path: string, o: { body?: unknown; token?: string } = {}) => {
    const headers: Record<string, string> = { host: 'localhost' }
    if (o.token) headers.authorization = o.token
    if (o.body !== undefined) headers['content-type'] = 'application/json'
    const res = await api.handle(
      new Request(`http://localhost${path}`, {
        method,
        headers,
        body: o.body === undefined ? undefined : JSON.stringify(o.body),
      }),
    )
    const text = await res.text()
    return { status: res.status, json: text ? JSON.parse(text) : undefined }
  }
  const token = async (path: string, body: unknown) => {
    const r = await request('POST', path, { body })
    expect(r.status).toBe(200)
    return r.json.__token as string
  }
  return {
    engine,
    api,
    db: apiDb.db,
    request,
    token,
    async close() {
      await api.lifecycle.stop()
      await engine.lifecycle.stop()
      await store.close()
      if (apiDb !== engineDb) apiDb.close()
      engineDb.close()
      await sqld?.stop()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

describe('the engine and an API instance on one database', () => {
  const clock = new ManualClock(Date.UTC(2026, 0, 5, 12, 0, 0))
  let c: Awaited<ReturnType<typeof twoInstances>>
  let user: string
  let dealer: string
  let manager: string
  const bids = async (...ps: number[]) => {
    for (const p of ps) {
      clock.advance(1000)
      const r = await c.request('POST', '/market/quotes', { token: dealer, body: { ticks: tick(p) } })
      expect(r.status).toBe(200)
    }
  }
  const create = async (body: Record<string, unknown>) => {
    const r = await c.request('POST', '/price_alert', { token: user, body: { login: 100001, ...body } })
    expect(r.status).toBe(200)
    return r.json.id as number
  }
  const fired = async (id: number) => (await alertRow(c.db, id)).firedCount

  beforeAll(async () => {
    c = await twoInstances(clock)
    user = await c.token('/sign/in', { login: 100001, password: 'demo-pass-1' })
    dealer = await c.token('/manager/sign/in', { login: 3, password: 'dealer-pass-1' })
    manager = await c.token('/manager/sign/in', { login: 1, password: 'manager-pass-1' })
    await bids(1.1)
  }, 60_000)
  afterAll(() => c?.close())

  test('an alert made through the API instance; the resync reads its firing first: no second firing', async () => {
    await bids(1.1)
    const id = await create(ABOVE)
    const undo = afterNextCommit(c.engine.kernel.uow, async () => {
      const r = await c.engine.runner.runOnce('alerts.sync')
      expect(r.ran).toBe(true)
    })
    try {
      await bids(1.21)
    } finally {
      undo()
    }
    expect(await fired(id)).toBe(1)
    clock.advance(REST_MS)
    await bids(1.22, 1.23)
    await c.engine.runner.runOnce('alerts.sync')
    await bids(1.24)
    expect(await fired(id)).toBe(1)
    await bids(1.19, 1.21)
    expect(await fired(id)).toBe(2)
    expect(await firedEvents(c.db, id)).toBe(2)
  })

  test('disabled through the API instance (its relay tells the engine): the alerts rest, then resume', async () => {
    await bids(1.1)
    const id = await create({ symbol: 'EURUSD', side: 0, condition: 0, target_price: 1.2 })
    const patch = (enable: number) =>
      c.request('PATCH', '/manager/accounts/100001', { token: manager, body: { enable } })
    expect((await patch(0)).status).toBe(200)
    await c.api.relay.drain()
    await bids(1.21)
    expect(await alertRow(c.db, id)).toMatchObject({ active: 1, firedCount: 0 })
    const made = await c.request('POST', '/price_alert', {
      token: manager,
      body: { login: 100001, symbol: 'EURUSD', side: 0, condition: 0, target_price: 1.3 },
    })
    expect([made.status, made.json.error]).toEqual([403, 'ACCOUNT_DISABLED'])
    expect((await patch(1)).status).toBe(200)
    await c.api.relay.drain()
    await bids(1.22)
    expect(await alertRow(c.db, id)).toMatchObject({ active: 0, firedCount: 1 })
    const left = await c.db
      .select()
      .from(priceAlerts)
      .where(and(eq(priceAlerts.login, 100001), eq(priceAlerts.active, 1)))
    expect(left.map((a) => a.id)).not.toContain(id)
  })
})
