// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { and, eq } from 'drizzle-orm'
import type { KeyValueStore } from '../../src/kernel/cache'
import { MemoryStore } from '../../src/kernel/cache/memory'
import { ResilientStore } from '../../src/kernel/cache/resilient'
import { ManualClock } from '../../src/kernel/clock'
import type { Db } from '../../src/kernel/db/client'
import { silentLogger } from '../../src/kernel/logger'
import { ReferenceData } from '../../src/modules/market/reference'
import { marketWatch, symbols } from '../../src/modules/market/schema'
import { makeTestApp, type TestApp } from '../support/app'

// The bounds of reference data held in memory (reference.ts) beside the version in the shared cache: a
// copy is reloaded every 30 s whatever the version says, every 5 s while the version cannot be read, and
// a bump the cache did not take is sent again until it is.

const clock = new ManualClock(Date.UTC(2026, 0, 5, 12, 0, 0))
let t: TestApp

beforeAll(async () => {
  t = await makeTestApp({ clock })
})
afterAll(() => t.close())

/** A shared store that stops answering while `down` (every call throws, PING too). */
function flakyStore(inner: KeyValueStore) {
  const state = { down: false }
  const wrapped = new Proxy(inner, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver)
      if (typeof v !== 'function') return v
      return (...args: unknown[]) => {
        if (state.down) return Promise.reject(new Error('connection refused'))
        return v.apply(target, args)
      }
    },
  })
  return { store: new ResilientStore(wrapped, silentLogger, 100), state }
}

const setSwap = (value: number) =>
  t.ctx.db.update(symbols).set({ swapLong: value }).where(eq(symbols.symbol, 'EURUSD'))

test('a copy is reloaded at least every 30 s even when no version bump reached the shared cache', async () => {
  const ref = new ReferenceData(t.ctx.db, t.ctx.store, clock)
  await ref.fresh()
  const before = ref.symbol('EURUSD')!.swapLong
  await setSwap(before - 1)
  clock.advance(2_000)
  await ref.fresh()
  expect(ref.symbol('EURUSD')!.swapLong).toBe(before)
  clock.advance(29_000)
  await ref.fresh()
  expect(ref.symbol('EURUSD')!.swapLong).toBe(before - 1)
})

test('an instance that cannot read the version reloads every 5 s', async () => {
  const { store, state } = flakyStore(new MemoryStore(clock))
  const ref = new ReferenceData(t.ctx.db, store, clock)
  state.down = true
  await ref.fresh()
  const before = ref.symbol('EURUSD')!.swapLong
  await setSwap(before - 1)
  clock.advance(1_500)
  await ref.fresh()
  expect(ref.symbol('EURUSD')!.swapLong).toBe(before)
  clock.advance(4_000)
  await ref.fresh()
  expect(ref.symbol('EURUSD')!.swapLong).toBe(before - 1)
  store.dependency.close()
})

test('a bump the shared cache did not take is sent again once it answers, and other instances reload', async () => {
  const shared = new MemoryStore(clock)
  const { store, state } = flakyStore(shared)
  const writer = new ReferenceData(t.ctx.db, store, clock)
  const reader = new ReferenceData(t.ctx.db, shared, clock)
  await writer.fresh()
  await reader.fresh()
  const before = reader.symbol('EURUSD')!.swapLong
  state.down = true
  await setSwap(before - 1)
  await writer.changed()
  await writer.fresh()
  expect(writer.symbol('EURUSD')!.swapLong).toBe(before - 1)
  state.down = false
  // the circuit closes at its next probe (within a second); the writer sends its bump again on its own
  await Bun.sleep(2_500)
  clock.advance(1_000)
  await reader.fresh()
  expect(reader.symbol('EURUSD')!.swapLong).toBe(before - 1)
  store.dependency.close()
})

test('a version that comes back after the shared cache lost it is not mistaken for the one held', async () => {
  const shared = new MemoryStore(clock)
  const a = new ReferenceData(t.ctx.db, shared, clock)
  const b = new ReferenceData(t.ctx.db, shared, clock)
  await b.changed()
  await a.fresh()
  const before = a.symbol('EURUSD')!.swapLong
  await shared.del('ref:v1:version')
  await setSwap(before - 1)
  await b.changed()
  clock.advance(1_000)
  await a.fresh()
  expect(a.symbol('EURUSD')!.swapLong).toBe(before - 1)
})

/**
 * The app's database, whose select of the whole symbols table (a reload) reads its rows when run but hands
 * them over only once `release` is called, while `holding`.
 */
function heldReloads(db: Db) {
  const state = { holding: false, read: Promise.withResolvers<void>(), gate: Promise.withResolvers<void>() }
  const wrapped = new Proxy(db, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver)
      if (prop !== 'select' || !state.holding) return typeof v === 'function' ? v.bind(target) : v
      return () => ({
        from: (table: typeof symbols) => ({
          // biome-ignore lint/suspicious/noThenProperty: stands for drizzle's query, which is awaited
          then: (ok: (rows: unknown) => unknown, fail: (e: unknown) => unknown) =>
            target
              .select()
              .from(table)
              .then(async (rows) => {
                state.read.resolve()
                await state.gate.promise
                return rows
              })
              .then(ok, fail),
        }),
      })
    },
  }) as Db
  return { db: wrapped, state }
}

test("a reload under way when changed() runs does not put back the old version: the writer's next use has the change", async () => {
  const { db, state } = heldReloads(t.ctx.db)
  const ref = new ReferenceData(db, new MemoryStore(clock), clock)
  await ref.fresh()
  const before = ref.symbol('EURUSD')!.swapLong
  clock.advance(31_000)
  state.holding = true
  const running = ref.fresh()
  await state.read.promise
  state.holding = false
  await setSwap(before - 1)
  await ref.changed()
  const joined = ref.fresh()
  state.gate.resolve()
  await joined
  expect(ref.symbol('EURUSD')!.swapLong).toBe(before - 1)
  await running
  await ref.fresh()
  expect(ref.symbol('EURUSD')!.swapLong).toBe(before - 1)
})

test('a cached watch list is rebuilt within a minute when a change reached the database but its bump never reached the cache', async () => {
  const user = await t.userToken()
  const list = async () =>
    Object.keys(
      (await t.request('GET', '/market/watch/list?login=100001&prefix=', { token: user })).json.assets,
    )
  const start = await list()
  expect(start.length).toBeGreaterThan(0)
  const gone = start[0]
  // a delete whose cache drop and version bump were lost with the writer
  await t.ctx.db.delete(marketWatch).where(and(eq(marketWatch.login, 100001), eq(marketWatch.symbol, gone)))
  clock.advance(2_000)
  expect(await list()).toContain(gone)
  clock.advance(59_000)
  const after = await list()
  expect(after).not.toContain(gone)
  expect(after).toEqual(start.slice(1))
})
