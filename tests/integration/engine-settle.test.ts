import { afterAll, beforeAll, expect, test } from 'bun:test'
import type { MessageBus } from '../../src/kernel/bus/bus'
import { defineChannel } from '../../src/kernel/bus/channel'
import { LocalBus } from '../../src/kernel/bus/local'
import { RedisBus } from '../../src/kernel/bus/redis'
import { RedisStore } from '../../src/kernel/cache/redis'
import { EngineRole } from '../../src/kernel/engine/role'
import { StoreLeases } from '../../src/kernel/jobs/leases'
import { silentLogger } from '../../src/kernel/logger'
import { type RedisServer, startRedis } from '../support/redis'

// The engine role reads the bus while what it read last settles (kernel/engine/role.ts): on Redis a tick
// that arrives while the last one's executions commit is handled at once; the cursor moves past a read
// only once a settle that covered it is over; the embedded bus answers a publish once its entry settled.
const WORK = defineChannel<number>('test.work')
let redis: RedisServer
beforeAll(async () => {
  redis = await startRedis()
}, 30_000)
afterAll(async () => {
  await redis?.stop()
})

function gate() {
  let open!: () => void
  const opened = new Promise<void>((r) => {
    open = r
  })
  return { open, opened }
}

async function until(ok: () => boolean | Promise<boolean>, ms = 5000) {
  const end = Date.now() + ms
  while (!(await ok())) {
    if (Date.now() > end) throw new Error('condition not met in time')
    await Bun.sleep(5)
  }
}

/** An engine on `bus` whose settler waits for the gates it is handed, one per settle. */
async function engineOn(bus: MessageBus, store: RedisStore) {
  const handled: number[] = []
  const settles: { saw: number[]; release: () => void }[] = []
  // each test's engine starts from now, whatever an earlier one left behind
  await store.del('engine:cursor:v1')
  await store.del('lease:engine')
  const role = new EngineRole('engine', bus, new StoreLeases(store), store, 'test-engine', silentLogger)
  role.register({
    handlers: [
      {
        channel: WORK,
        handle: async (entries) => {
          for (const e of entries) handled.push(e.data)
        },
      },
    ],
    settle: async () => {
      const g = gate()
      settles.push({ saw: [...handled], release: g.open })
      await g.opened
    },
  })
  await role.start(false)
  expect(role.isLeader).toBe(true)
  return { role, handled, settles }
}

test('on Redis, entries read while a settle runs are handled at once and settled by the next one', async () => {
  const bus = new RedisBus(redis.url, silentLogger)
  const store = new RedisStore(redis.url)
  const cursor = () => store.get('engine:cursor:v1')
  const { role, handled, settles } = await engineOn(bus, store)
  try {
    const first = await bus.publish(WORK.name, 1)
    await until(() => settles.length === 1)
    // the first settle holds; the bus is still read
    const second = await bus.publish(WORK.name, 2)
    const third = await bus.publish(WORK.name, 3)
    await until(() => handled.length === 3)
    expect(settles.length).toBe(1)
    expect(await cursor()).not.toBe(first)
    settles[0]!.release()
    // one settle covers both entries read meanwhile, and the cursor moves past the first only now
    await until(() => settles.length === 2)
    expect(settles[1]!.saw).toEqual([1, 2, 3])
    await until(async () => (await cursor()) === first)
    // the cursor is saved at most every 50 ms
    await Bun.sleep(60)
    settles[1]!.release()
    await until(async () => (await cursor()) === third)
    expect(second < third).toBe(true)
    expect(settles.length).toBe(2)
  } finally {
    for (const s of settles) s.release()
    await role.stop()
    await bus.close()
    store.close()
  }
})

test('stepping down waits for the settle in progress before the books are let go', async () => {
  const bus = new RedisBus(redis.url, silentLogger)
  const store = new RedisStore(redis.url)
  const { role, settles } = await engineOn(bus, store)
  try {
    await bus.publish(WORK.name, 1)
    await until(() => settles.length === 1)
    let stopped = false
    const stopping = role.stop().then(() => {
      stopped = true
    })
    await Bun.sleep(50)
    expect(stopped).toBe(false)
    settles[0]!.release()
    await stopping
    expect(stopped).toBe(true)
  } finally {
    for (const s of settles) s.release()
    await bus.close()
    store.close()
  }
})

test('on the embedded bus a publish answers once its entry has settled', async () => {
  const bus = new LocalBus()
  const store = new RedisStore(redis.url)
  const { role, settles } = await engineOn(bus, store)
  try {
    let published = false
    const publishing = bus.publish(WORK.name, 1).then(() => {
      published = true
    })
    await until(() => settles.length === 1)
    await Bun.sleep(20)
    expect(published).toBe(false)
    settles[0]!.release()
    await publishing
    expect(published).toBe(true)
  } finally {
    for (const s of settles) s.release()
    await role.stop()
    store.close()
  }
})
