import { afterAll, beforeAll, expect, test } from 'bun:test'
import { RedisClient } from 'bun'
import type { BusEntry } from '../../src/kernel/bus/bus'
import { RedisBus } from '../../src/kernel/bus/redis'
import { UpstashBus } from '../../src/kernel/bus/upstash'
import { silentLogger } from '../../src/kernel/logger'
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

// a reviewer's finding: a quote stream at the edge asked Upstash again the moment a poll found entries,
// so on a busy bus each stream cost a REST call per round trip, not two a second
test('a polling subscriber asks at most once per poll interval while the bus is busy, and misses nothing', async () => {
  const writer = new RedisBus(redis.url, silentLogger)
  const edge = new UpstashBus(bridge.url, 'test-token', silentLogger)
  const got: BusEntry[] = []
  const from = await writer.newest()
  const before = bridge.commands.get('XRANGE') ?? 0
  const sub = edge.subscribe(from, async (entries) => void got.push(...entries), { pollMs: 500 })
  let sent = 0
  const started = Date.now()
  while (Date.now() - started < 2500) {
    await writer.publish('test.tick', { n: ++sent })
    await Bun.sleep(2)
  }
  // the last entries arrive within one more interval
  const until = Date.now() + 3000
  while (got.length < sent && Date.now() < until) await Bun.sleep(50)
  await sub.close()
  // a poll is one XRANGE call, which tells a trimmed stream too (it starts at the poller's own position):
  // at the edge every call is a subrequest of the stream's request, which Cloudflare counts
  const polls = (bridge.commands.get('XRANGE') ?? 0) - before
  console.log(`[bus] ${sent} entries in 2.5 s reached the subscriber in ${polls} polls`)
  expect(got.map((e) => (e.data as { n: number }).n)).toEqual(Array.from({ length: sent }, (_, i) => i + 1))
  // 2.5 s at two a second, the last interval, and room for a loaded machine
  expect(polls).toBeLessThanOrEqual(10)
  await edge.close()
  await writer.close()
}, 20_000)

// a reviewer's finding: a poller whose position the stream was trimmed past asked again from there for ever
// (the range answers "trimmed"), so an edge quote stream sent keep-alives only
test('a poller the stream was trimmed past goes on from the newest entry', async () => {
  const writer = new RedisBus(redis.url, silentLogger)
  const edge = new UpstashBus(bridge.url, 'test-token', silentLogger)
  const ids: string[] = []
  for (let n = 1; n <= 5; n++) ids.push(await writer.publish('test.trim', { n }))
  const raw = new RedisClient(redis.url)
  await raw.send('XTRIM', ['bus:v1', 'MAXLEN', '2'])
  raw.close()
  // the contract of range: null when the stream no longer keeps what followed `after` (SSE resume
  // answers a snapshot then); from the first kept entry on, what follows
  expect(await edge.range(ids[0]!, 10)).toBeNull()
  expect(await writer.range(ids[0]!, 10)).toBeNull()
  expect((await writer.range(ids[3]!, 10))!.map((e) => (e.data as { n: number }).n)).toEqual([5])
  const got: number[] = []
  const sub = edge.subscribe(
    ids[0]!,
    async (entries) => void got.push(...entries.map((e) => (e.data as { n: number }).n)),
    {
      pollMs: 50,
    },
  )
  await Bun.sleep(300)
  await writer.publish('test.trim', { n: 6 })
  const until = Date.now() + 3000
  while (!got.includes(6) && Date.now() < until) await Bun.sleep(50)
  await sub.close()
  expect(got).toContain(6)
  await edge.close()
  await writer.close()
})

// a reviewer's finding on the one-call poll: a position that is gone but not trimmed (the tail a Redis
// lost in a failover or a restart from a snapshot, here deleted) is no trim: what follows it is answered
test('a poller whose own entry is gone, but not trimmed, gets what follows it', async () => {
  const writer = new RedisBus(redis.url, silentLogger)
  const edge = new UpstashBus(bridge.url, 'test-token', silentLogger)
  const ids: string[] = []
  for (let n = 1; n <= 3; n++) ids.push(await writer.publish('test.lost', { n }))
  const raw = new RedisClient(redis.url)
  await raw.send('XDEL', ['bus:v1', ids[1]!])
  raw.close()
  for (const bus of [edge, writer])
    expect((await bus.range(ids[1]!, 10))!.map((e) => (e.data as { n: number }).n)).toEqual([3])
  // and a position still there is answered in one call
  const before = bridge.commands.get('XRANGE') ?? 0
  expect((await edge.range(ids[0]!, 10))!.map((e) => (e.data as { n: number }).n)).toEqual([3])
  expect((bridge.commands.get('XRANGE') ?? 0) - before).toBe(1)
  await edge.close()
  await writer.close()
})

// found while measuring the quote stream's memory: the stream was kept by count (200,000 entries), and an
// entry is a batch of up to 5,000 ticks: tens of gigabytes of Redis for a feed that posts large batches
test('the stream keeps entries by age, whatever they weigh: older ones are trimmed by the appends after them, on Redis and Upstash', async () => {
  for (const make of [
    () => new RedisBus(redis.url, silentLogger, 300),
    () => new UpstashBus(bridge.url, 'test-token', silentLogger, 100, 300),
  ]) {
    const raw = new RedisClient(redis.url)
    await raw.send('DEL', ['bus:v1'])
    const bus = make()
    // whole nodes of the stream are trimmed (100 entries each by default): several of them
    const big = { ticks: Array.from({ length: 50 }, (_, i) => ({ symbol: 'EURUSD', bid: 1 + i / 1e5 })) }
    const first = await bus.publish('test.age', big)
    for (let n = 0; n < 499; n++) await bus.publish('test.age', big)
    expect(Number(await raw.send('XLEN', ['bus:v1']))).toBe(500)
    await Bun.sleep(400)
    // an append trims before the time of the one it follows (the stream's clock): the second after the pause
    await bus.publish('test.age', big)
    expect(Number(await raw.send('XLEN', ['bus:v1']))).toBe(501)
    const last = await bus.publish('test.age', big)
    expect(Number(await raw.send('XLEN', ['bus:v1']))).toBeLessThan(150)
    // what was trimmed is answered as such (a resume starts from the latest quotes); the newest is there
    expect(await bus.range(first, 10)).toBeNull()
    expect(await bus.newest()).toBe(last)
    raw.close()
    await bus.close()
  }
})
