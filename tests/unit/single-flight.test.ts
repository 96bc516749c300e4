// Loads of what an instance keeps in memory: one shared run in a server, a run per caller at the edge
// (kernel/single-flight.ts: a Worker cannot share a promise between requests).
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { BrandRegistry } from '../../src/kernel/brand/registry'
import { brandHosts, brands } from '../../src/kernel/brand/schema'
import { migrateDatabase } from '../../src/kernel/db/migrate'
import { SingleFlight } from '../../src/kernel/single-flight'
import { tempDatabase } from '../support/database'

/** A load that settles when told, counting its runs. */
function gated() {
  let runs = 0
  const opens: (() => void)[] = []
  const load = () => {
    runs++
    return new Promise<number>((resolve) => opens.push(() => resolve(runs)))
  }
  return {
    load,
    runs: () => runs,
    open: () => {
      for (const f of opens.splice(0)) f()
    },
  }
}

test('shared: callers during a run join it, and the next call after it runs again', async () => {
  const flight = new SingleFlight<number>(true)
  const g = gated()
  const a = flight.run(g.load)
  const b = flight.run(g.load)
  expect(flight.busy).toBe(true)
  g.open()
  expect([await a, await b, g.runs()]).toEqual([1, 1, 1])
  expect(flight.busy).toBe(false)
  const c = flight.run(g.load)
  g.open()
  expect([await c, g.runs()]).toEqual([2, 2])
})

test('shared: a failed run is not kept', async () => {
  const flight = new SingleFlight<number>(true)
  await expect(flight.run(() => Promise.reject(new Error('database away')))).rejects.toThrow('database away')
  expect(flight.busy).toBe(false)
  expect(await flight.run(async () => 7)).toBe(7)
})

test('at the edge: every caller runs its own load, and nothing is held between them', async () => {
  const flight = new SingleFlight<number>(false)
  const g = gated()
  const a = flight.run(g.load)
  const b = flight.run(g.load)
  expect(flight.busy).toBe(false)
  g.open()
  expect([await a, await b, g.runs()]).toEqual([2, 2, 2])
})

let db: Awaited<ReturnType<typeof tempDatabase>>

beforeAll(async () => {
  db = await tempDatabase('single-flight')
  await migrateDatabase(db.db)
  await db.db.transaction((tx) => tx.insert(brands).values({ id: 1, name: 'demo', createdAt: 0 }))
})

afterAll(() => db?.close())

test('brands past their TTL: a server answers from what it holds while it reloads; the edge reloads first', async () => {
  // a TTL below 0: every look after the first is past it
  const server = new BrandRegistry(db.db, false, -1)
  const edge = new BrandRegistry(db.db, true, -1)
  expect([await server.byHost('new.example'), await edge.byHost('new.example')]).toEqual([null, null])
  await db.db.transaction((tx) => tx.insert(brandHosts).values({ host: 'new.example', brandId: 1 }))
  // the server's reload runs behind this answer (a Worker would drop it when the request ends)
  expect(await server.byHost('new.example')).toBeNull()
  expect(await edge.byHost('new.example')).toEqual({ id: 1, name: 'demo' })
})

test('a failed reload past the TTL keeps what is held and is not tried again by every request', async () => {
  let down = false
  let tries = 0
  // the database, away on demand
  const flaky = new Proxy(db.db, {
    get(target, prop, receiver) {
      if (prop === 'select' && down)
        return () => {
          tries++
          throw new Error('database away')
        }
      return Reflect.get(target, prop, receiver)
    },
  })
  const edge = new BrandRegistry(flaky, true, 1)
  expect(await edge.byHost('new.example')).toEqual({ id: 1, name: 'demo' })
  down = true
  await Bun.sleep(5)
  expect(await edge.byHost('new.example')).toEqual({ id: 1, name: 'demo' })
  expect(await edge.byHost('new.example')).toEqual({ id: 1, name: 'demo' })
  expect(tries).toBe(1)
})
