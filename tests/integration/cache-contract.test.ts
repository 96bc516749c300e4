import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { RedisClient } from 'bun'
import { RedisBus } from '../../src/kernel/bus/redis'
import type { KeyValueStore } from '../../src/kernel/cache'
import { JsonCache } from '../../src/kernel/cache/json-cache'
import { MemoryStore } from '../../src/kernel/cache/memory'
import { RedisStore } from '../../src/kernel/cache/redis'
import { ResilientStore } from '../../src/kernel/cache/resilient'
import { UpstashStore } from '../../src/kernel/cache/upstash'
import { ManualClock } from '../../src/kernel/clock'
import { silentLogger } from '../../src/kernel/logger'
import { makeTestApp } from '../support/app'
import { type RedisServer, startRedis } from '../support/redis'
import { startUpstashBridge } from '../support/upstash-bridge'

let redis: RedisServer
let bridge: ReturnType<typeof startUpstashBridge>
beforeAll(async () => {
  redis = await startRedis()
  bridge = startUpstashBridge(redis.url, 'test-token')
})
afterAll(async () => {
  bridge.stop()
  await redis.stop()
})

/**
 * Each adapter with the way time passes for it: the in-process store runs on a manual clock (no sleeping,
 * nothing to race); the servers keep real time, so their expiries get margins of half a second, wide
 * enough for a loaded CI machine (100 ms margins failed there once).
 */
interface Adapter {
  make: () => KeyValueStore
  /** one unit of time in ms: every ttl and wait below is a multiple of it */
  unit: number
  wait: (ms: number) => Promise<unknown>
}
const clock = new ManualClock()
const adapters: [string, Adapter][] = [
  ['memory', { make: () => new MemoryStore(clock), unit: 100, wait: async (ms) => clock.advance(ms) }],
  ['redis', { make: () => new RedisStore(redis.url), unit: 500, wait: Bun.sleep }],
  ['upstash', { make: () => new UpstashStore(bridge.url, 'test-token'), unit: 500, wait: Bun.sleep }],
]

for (const [name, { make, unit: u, wait }] of adapters) {
  describe(`KeyValueStore contract: ${name}`, () => {
    let s: KeyValueStore
    const k = (x: string) => `contract:${name}:${x}:${crypto.randomUUID()}`
    beforeAll(() => {
      s = make()
    })
    afterAll(() => s.close())

    test('get of a missing key is null; set then get round-trips text', async () => {
      const key = k('rt')
      expect(await s.get(key)).toBeNull()
      await s.set(key, '{"a":1,"ü":"ß"}')
      expect(await s.get(key)).toBe('{"a":1,"ü":"ß"}')
    })

    test('values that look like numbers or JSON stay strings', async () => {
      const key = k('num')
      await s.set(key, '42')
      expect(await s.get(key)).toBe('42')
    })

    test('ttl expires a key', async () => {
      const key = k('ttl')
      await s.set(key, 'v', 2 * u)
      expect(await s.get(key)).toBe('v')
      await wait(3 * u)
      expect(await s.get(key)).toBeNull()
    })

    test('setNX sets only once', async () => {
      const key = k('nx')
      expect(await s.setNX(key, 'first', 5000)).toBe(true)
      expect(await s.setNX(key, 'second', 5000)).toBe(false)
      expect(await s.get(key)).toBe('first')
    })

    test('setNX races: exactly one winner', async () => {
      const key = k('race')
      const wins = await Promise.all(Array.from({ length: 10 }, (_, i) => s.setNX(key, String(i), 5000)))
      expect(wins.filter(Boolean).length).toBe(1)
    })

    test('lease: one holder at a time, renewed by it, told to others with the time it has left', async () => {
      const key = k('lease')
      const ttl = 3 * u
      const answers = await Promise.all(['a', 'b', 'c', 'd'].map((o) => s.lease(key, o, ttl)))
      expect(answers.filter((a) => a.held)).toHaveLength(1)
      const holder = ['a', 'b', 'c', 'd'][answers.findIndex((a) => a.held)]
      const other = holder === 'a' ? 'b' : 'a'
      const refused = await s.lease(key, other, ttl)
      expect(refused.held).toBe(false)
      if (!refused.held) expect(refused.freeInMs).toBeGreaterThan(2 * u)
      await wait(2 * u)
      expect((await s.lease(key, holder, ttl)).held).toBe(true) // renewed: good for a whole ttl more
      await wait(2 * u)
      expect((await s.lease(key, other, ttl)).held).toBe(false)
      await s.unlease(key, other) // not the holder: nothing happens
      expect((await s.lease(key, other, ttl)).held).toBe(false)
      await s.unlease(key, holder)
      expect((await s.lease(key, other, ttl)).held).toBe(true)
      await wait(ttl + u)
      expect((await s.lease(key, holder, ttl)).held).toBe(true) // lapsed: anyone may take it
    })

    test('incr counts atomically and the expiry starts with the first increment', async () => {
      const key = k('incr')
      const results = await Promise.all(Array.from({ length: 10 }, () => s.incr(key, 2 * u)))
      expect(results.sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
      await wait(3 * u)
      expect(await s.get(key)).toBeNull()
      expect(await s.incr(key, 1000)).toBe(1)
    })

    test('incr by a step: a count given back (-1) keeps the expiry the first increment set', async () => {
      const key = k('incr-by')
      expect(await s.incr(key, 2 * u)).toBe(1)
      expect(await s.incr(key, 2 * u, 3)).toBe(4)
      expect(await s.incr(key, 2 * u, -1)).toBe(3)
      // never below zero: a count given back after its key was cleared
      expect(await s.incr(k('incr-by-gone'), 2 * u, -1)).toBe(0)
      expect(await s.incr(k('incr-by-gone'), 2 * u)).toBe(1)
      await wait(3 * u)
      expect(await s.get(key)).toBeNull()
    })

    test("expire renews a live key's expiry and keeps its value; a missing key stays missing", async () => {
      const key = k('expire')
      // the first expiry leaves 3 units for the renewal to arrive on a loaded machine (one unit failed
      // once in CI); the renewed key outlives it by 3 units and is read 1.5 units past it
      expect(await s.incr(key, 4 * u, 5)).toBe(5)
      await wait(u)
      await s.expire(key, 6 * u)
      await wait(4.5 * u)
      expect(await s.get(key)).toBe('5')
      await wait(2.5 * u)
      expect(await s.get(key)).toBeNull()
      await s.expire(k('expire-missing'), 3 * u)
      expect(await s.get(k('expire-missing'))).toBeNull()
    })

    test('del removes several keys', async () => {
      const a = k('a')
      const b = k('b')
      await s.set(a, '1')
      await s.set(b, '2')
      await s.del(a, b)
      expect(await s.get(a)).toBeNull()
      expect(await s.get(b)).toBeNull()
      await s.del()
    })

    test('setMany sets every key, past the keys of one script call, with the expiry or none', async () => {
      const many = Array.from({ length: 1203 }, (_, i) => [k(`many${i}`), `v${i}`] as const)
      await s.setMany(many, 2 * u)
      expect(await s.get(many[0]![0])).toBe('v0')
      expect(await s.get(many[1202]![0])).toBe('v1202')
      const kept = [[k('kept'), 'stays']] as const
      await s.setMany(kept)
      await s.setMany([])
      await wait(3 * u)
      expect(await s.get(many[0]![0])).toBeNull()
      expect(await s.get(many[700]![0])).toBeNull()
      expect(await s.get(kept[0][0])).toBe('stays')
    })

    test('getMany answers every key in its order, null where absent, past the keys of one call', async () => {
      const many = Array.from({ length: 1203 }, (_, i) => [k(`get${i}`), `g${i}`] as const)
      await s.setMany(many.filter((_, i) => i % 2 === 0))
      const got = await s.getMany(many.map(([key]) => key))
      expect(got).toHaveLength(1203)
      expect(got.map((v, i) => [i, v])).toEqual(many.map(([, v], i) => [i, i % 2 === 0 ? v : null]))
      expect(await s.getMany([])).toEqual([])
    })

    test('setIf sets only while the key holds what the caller expects (null: absent), with its expiry', async () => {
      const key = k('if')
      expect(await s.setIf(key, 'other', 'x', 5000)).toBe(false)
      expect(await s.get(key)).toBeNull()
      expect(await s.setIf(key, null, 'first', 2 * u)).toBe(true)
      expect(await s.setIf(key, null, 'again', 5000)).toBe(false)
      expect(await s.setIf(key, 'stale', 'again', 5000)).toBe(false)
      expect(await s.get(key)).toBe('first')
      expect(await s.setIf(key, 'first', 'second', 2 * u)).toBe(true)
      expect(await s.get(key)).toBe('second')
      await wait(3 * u)
      expect(await s.get(key)).toBeNull()
    })

    test('a read-through fill that loaded before an invalidation caches nothing; the next read loads again', async () => {
      const cache = new JsonCache(s, 10 * u)
      const key = k('json')
      let row = { epoch: 1 }
      let loaded!: () => void
      const reading = new Promise<void>((r) => {
        loaded = r
      })
      let release!: () => void
      const held = new Promise<void>((r) => {
        release = r
      })
      // a request loads the row, and stays between its read and its fill while a write commits
      const slow = cache.get(key, async () => {
        const seen = row
        loaded()
        await held
        return seen
      })
      await reading
      row = { epoch: 2 }
      await cache.del(key)
      release()
      expect(await slow).toEqual({ epoch: 1 })
      // the old row was not cached: the next read loads the new one, and caches it
      expect(await cache.get(key, async () => row)).toEqual({ epoch: 2 })
      expect(await cache.get(key, async () => ({ epoch: 99 }))).toEqual({ epoch: 2 })
      // a key never filled: the first fill caches, and an invalidation after it is seen at once
      const fresh = k('json-fresh')
      expect(await cache.get(fresh, async () => ({ n: 1 }))).toEqual({ n: 1 })
      expect(await cache.get(fresh, async () => ({ n: 2 }))).toEqual({ n: 1 })
      await cache.del(fresh)
      expect(await cache.get(fresh, async () => ({ n: 3 }))).toEqual({ n: 3 })
    })

    test('ping', async () => {
      expect(await s.ping()).toBe(true)
    })
  })
}

test('the in-process store sweeps expired keys nobody reads again as other keys are written', async () => {
  const c = new ManualClock()
  const m = new MemoryStore(c)
  for (let i = 0; i < 3000; i++) await m.set(`gone:${i}`, 'v', 1000)
  for (let i = 0; i < 500; i++) await m.set(`kept:${i}`, 'v')
  c.advance(2000)
  // writes enough for a whole round of the map wherever the sweep stood (two entries looked at per write,
  // the new entries included): every expired entry has been looked at once
  for (let i = 0; i < 4000; i++) await m.set(`new:${i}`, 'v', 60_000)
  expect(m.size).toBe(4500)
  expect(await m.get('kept:499')).toBe('v')
  expect(await m.get('gone:0')).toBeNull()
})

describe('Redis outage: callers degrade, no request answers 5xx', () => {
  test('the app keeps serving sign-in, account reads and health while redis-server is down, and recovers', async () => {
    const own = await startRedis()
    const warnings: string[] = []
    const logger = { log: (level: string, msg: string) => level === 'warn' && warnings.push(msg) }
    const store = new ResilientStore(new RedisStore(own.url, 300), logger, 200)
    const t = await makeTestApp({ store, logger: logger as never }).catch(async (e) => {
      await own.stop()
      throw e
    })
    try {
      const token = await t.userToken()
      expect((await t.request('GET', '/account/me', { token })).status).toBe(200)
      await own.stop()
      for (let i = 0; i < 5; i++) {
        const me = await t.request('GET', '/account/me', { token })
        expect(me.status).toBe(200)
        expect(me.json.login).toBe(100001)
      }
      expect(
        (await t.request('POST', '/sign/in', { body: { login: 100002, password: 'demo-pass-1' } })).status,
      ).toBe(200)
      expect(
        (await t.request('POST', '/sign/in', { body: { login: 100002, password: 'wrong-pass-1' } })).status,
      ).toBe(403)
      // readiness says what is down: 503 for load balancers; liveness still answers
      const health = await t.request('GET', '/health')
      expect(health.status).toBe(503)
      expect(health.json).toMatchObject({ status: 'degraded', db: 'ok', cache: 'error' })
      expect(health.json.checks.cache.state).toBe('down')
      expect((await t.request('GET', '/health/live')).status).toBe(200)
      expect(warnings).toContain('dependency down')

      const back = await startRedis(own.port)
      try {
        let ok = false
        // the breaker lets a probe through after its backoff (at most 5 s)
        for (let i = 0; i < 120 && !ok; i++) {
          ok = (await t.request('GET', '/health')).json.cache === 'ok'
          if (!ok) await Bun.sleep(100)
        }
        expect(ok).toBe(true)
      } finally {
        await back.stop()
      }
    } finally {
      await t.close()
      await own.stop()
    }
  }, 60_000)

  test('redis-server back: the circuits close without a call, so the first cache read and bus append succeed', async () => {
    const own = await startRedis()
    const store = new ResilientStore(new RedisStore(own.url, 300), silentLogger, 200)
    const bus = new RedisBus(own.url, silentLogger)
    try {
      await store.set('k', 'v')
      expect(await store.get('k')).toBe('v')
      expect(typeof (await bus.publish('test.entry', { n: 1 }))).toBe('string')
      await own.stop()
      expect(await store.get('k')).toBeNull()
      expect(bus.publish('test.entry', { n: 2 })).rejects.toThrow('bus unavailable')
      expect([store.dependency.up, bus.dependency.up]).toEqual([false, false])
      // an outage longer than the breakers' backoff (250 ms doubling to 2 s)
      await Bun.sleep(3000)
      const back = await startRedis(own.port)
      try {
        // the restarted server has no data (no persistence): the value is written again beside the app
        const raw = new RedisClient(back.url)
        await raw.send('SET', ['k', 'v2'])
        raw.close()
        // nothing of the store or the bus is called until both say they are up
        const until = Date.now() + 8000
        while (!(store.dependency.up && bus.dependency.up) && Date.now() < until) await Bun.sleep(100)
        expect([store.dependency.up, bus.dependency.up]).toEqual([true, true])
        expect(await store.get('k')).toBe('v2')
        expect(typeof (await bus.publish('test.entry', { n: 3 }))).toBe('string')
      } finally {
        await back.stop()
      }
    } finally {
      await bus.close()
      await store.close()
      await own.stop()
    }
  }, 30_000)

  test('the resilient wrapper answers within its timeout when the server never replies', async () => {
    const slow = {
      kind: 'redis',
      get: () => new Promise<string | null>(() => {}),
    } as unknown as KeyValueStore
    const s = new ResilientStore(slow, silentLogger, 50)
    const started = performance.now()
    expect(await s.get('x')).toBeNull()
    expect(performance.now() - started).toBeLessThan(500)
    // the timeout opened the circuit: the next calls fail at once while a probe runs beside them
    expect(s.dependency.up).toBe(false)
  })

  test('a failed call opens the circuit, and a probe that answers closes it', async () => {
    let failing = true
    const flaky = {
      kind: 'redis',
      get: async () => {
        if (failing) throw new Error('connection refused')
        return 'v'
      },
      ping: async () => !failing,
    } as unknown as KeyValueStore
    const s = new ResilientStore(flaky, silentLogger, 50)
    expect(await s.get('x')).toBeNull()
    expect(s.dependency.up).toBe(false)
    failing = false
    // the breaker lets its probe through after a backoff of 250 ms
    let value: string | null = null
    for (let i = 0; i < 60 && value === null; i++) {
      value = await s.get('x')
      if (value === null) await Bun.sleep(50)
    }
    expect(value).toBe('v')
    expect(s.dependency.up).toBe(true)
  })
})
