// The clock of the API host and Redis's apart (review): a tick's deadline is in Redis's clock (stream.ts,
// StreamClock measures the offset on every append), so skew neither fails every publish (Redis ahead) nor
// lets a refused tick through when a paused Redis runs it later (Redis behind). This host's clock is faked
// (Date.now) against a real redis-server.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { RedisBus } from '../../src/kernel/bus/redis'
import { silentLogger } from '../../src/kernel/logger'
import { pauseProcess, waitFor } from '../support/ports'
import { type RedisServer, startRedis } from '../support/redis'
// the price channel, as the market module declares it (its entries carry a deadline)
import '../../src/modules/market/quotes'

let redis: RedisServer
beforeAll(async () => {
  redis = await startRedis()
})
afterAll(async () => {
  try {
    process.kill(redis.pid, 'SIGCONT')
  } catch {}
  await redis.stop()
})

const realNow = Date.now

test('800 ms of clock skew (Redis ahead of the API host): a healthy, fast Redis delivers every publish', async () => {
  const reader = new RedisBus(redis.url, silentLogger)
  const from = await reader.newest()
  const got: string[] = []
  const sub = reader.subscribe(from, async (es) => void got.push(...es.map((e) => e.type)))
  const writer = new RedisBus(redis.url, silentLogger)
  await writer.newest()
  Date.now = () => realNow() - 800 // this host's clock is 800 ms behind Redis's
  const outcomes: string[] = []
  try {
    for (const type of [
      'market.ticks',
      'trading.accounts-changed',
      'trading.groups-changed',
      'market.ticks',
    ]) {
      const t0 = performance.now()
      outcomes.push(
        await writer.publish(type, [1]).then(
          () => 'ok',
          (e: Error) => `failed after ${Math.round(performance.now() - t0)} ms: ${e.message}`,
        ),
      )
    }
    // the offset measured: Redis's clock less this host's
    expect(Math.abs(writer.clockOffsetMs! - 800)).toBeLessThan(50)
  } finally {
    Date.now = realNow
  }
  await waitFor(async () => got.length >= 4, 5_000, 'the reader')
  await sub.close()
  await reader.close()
  await writer.close()
  expect(outcomes).toEqual(['ok', 'ok', 'ok', 'ok'])
  expect(got).toEqual(['market.ticks', 'trading.accounts-changed', 'trading.groups-changed', 'market.ticks'])
}, 30_000)

test('Redis 5 s behind the API host: a tick refused while Redis was paused is still dropped when it runs it; a change notice is delivered late', async () => {
  const reader = new RedisBus(redis.url, silentLogger)
  const from = await reader.newest()
  const got: number[] = []
  const sub = reader.subscribe(
    from,
    async (es) => void got.push(...es.map((e) => (e.data as { n: number }).n)),
  )
  const writer = new RedisBus(redis.url, silentLogger)
  const notices = new RedisBus(redis.url, silentLogger)
  Date.now = () => realNow() + 5000 // this host's clock is 5 s ahead of Redis's
  try {
    await writer.publish('market.ticks', { n: 1 })
    await notices.publish('trading.accounts-changed', { n: 10 })
    await pauseProcess(redis.pid)
    const refused = await writer.publish('market.ticks', { n: 2 }).then(
      () => 'published',
      (e: Error) => e.message,
    )
    expect(refused).toContain('bus unavailable')
    // a change notice whose publish timed out is appended when Redis resumes and delivered then
    const notice = await notices.publish('trading.accounts-changed', { n: 11 }).then(
      () => 'published',
      (e: Error) => e.message,
    )
    expect(notice).toContain('bus unavailable')
    await Bun.sleep(1500)
    process.kill(redis.pid, 'SIGCONT')
    await waitFor(
      () =>
        writer.publish('market.ticks', { n: 3 }).then(
          () => true,
          () => false,
        ),
      10_000,
      'a publish after Redis resumed',
    )
    await waitFor(async () => got.includes(3), 10_000, 'the reader past the resume')
  } finally {
    Date.now = realNow
    try {
      process.kill(redis.pid, 'SIGCONT')
    } catch {}
  }
  expect(got.filter((x) => x !== 3)).toEqual([1, 10, 11])
  expect(
    (await reader.range(from, 100))!.map((e) => (e.data as { n: number }).n).filter((x) => x !== 3),
  ).toEqual([1, 10, 11])
  await sub.close()
  await Promise.all([reader.close(), writer.close(), notices.close()])
}, 30_000)
