import { afterAll, beforeAll, expect, test } from 'bun:test'
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
  // a poll is two XRANGE calls (the stream's first entry, to tell a trimmed stream, then the page)
  const polls = ((bridge.commands.get('XRANGE') ?? 0) - before) / 2
  console.log(`[bus] ${sent} entries in 2.5 s reached the subscriber in ${polls} polls`)
  expect(got.map((e) => (e.data as { n: number }).n)).toEqual(Array.from({ length: sent }, (_, i) => i + 1))
  // 2.5 s at two a second, the last interval, and room for a loaded machine
  expect(polls).toBeLessThanOrEqual(10)
  await edge.close()
  await writer.close()
}, 20_000)
