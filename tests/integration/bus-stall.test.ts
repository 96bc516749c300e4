// Redis paused (SIGSTOP) rather than gone: an XADD already on the socket when its call timed out is run by
// Redis when it resumes, seconds later. A publish that failed (an ingest answered 503: the feed sends it
// again) must not be applied then, at a price long past (docs/adr/0014: a refused write is not half-written).
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { type Client, createClient } from '@libsql/client'
import { RedisClient } from 'bun'
import { RedisBus } from '../../src/kernel/bus/redis'
import { BUS_STREAM } from '../../src/kernel/bus/stream'
import { UpstashBus } from '../../src/kernel/bus/upstash'
import { silentLogger } from '../../src/kernel/logger'
import { pauseProcess, waitFor } from '../support/ports'
import { type RedisServer, startRedis } from '../support/redis'
import { type ScaleShape, startScaleShape } from '../support/scale-shape'
import { signIn } from '../support/server'
import { startUpstashBridge } from '../support/upstash-bridge'
// the price channel, as the market module declares it (its entries carry a deadline)
import '../../src/modules/market/quotes'

const n = (es: { data: unknown }[] | null) => es?.map((e) => (e.data as { n: number }).n)

let redis: RedisServer
let bridge: ReturnType<typeof startUpstashBridge>
beforeAll(async () => {
  redis = await startRedis()
  bridge = startUpstashBridge(redis.url, 'test-token')
})
afterAll(async () => {
  try {
    process.kill(redis.pid, 'SIGCONT')
  } catch {}
  bridge.stop()
  await redis.stop()
})

test('a tick whose append timed out while Redis was paused is dropped by every reader when Redis runs it', async () => {
  const writer = new RedisBus(redis.url, silentLogger)
  const reader = new RedisBus(redis.url, silentLogger)
  const edge = new UpstashBus(bridge.url, 'test-token', silentLogger)
  const from = await writer.newest()
  const got: number[] = []
  const polled: number[] = []
  const sub = reader.subscribe(from, async (es) => void got.push(...n(es)!))
  const poll = edge.subscribe(from, async (es) => void polled.push(...n(es)!), { pollMs: 50 })
  await writer.publish('market.ticks', { n: 1 })
  await pauseProcess(redis.pid)
  const refused = await writer.publish('market.ticks', { n: 2 }).then(
    () => 'published',
    (e: Error) => e.message,
  )
  expect(refused).toContain('bus unavailable')
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
  await waitFor(async () => got.includes(3) && polled.includes(3), 10_000, 'the readers past the resume')
  // the refused append is in the stream (Redis ran it when it resumed), and no reader took it
  const raw = new RedisClient(redis.url)
  const stored = (await raw.send('XRANGE', [BUS_STREAM, '-', '+'])) as [string, string[]][]
  raw.close()
  expect(stored.map(([, f]) => (JSON.parse(f[f.indexOf('d') + 1]!) as { n: number }).n)).toContain(2)
  expect(got.filter((x) => x !== 3)).toEqual([1])
  expect(polled.filter((x) => x !== 3)).toEqual([1])
  expect(n(await reader.range(from, 100))!.filter((x) => x !== 3)).toEqual([1])
  expect(n(await edge.range(from, 100))!.filter((x) => x !== 3)).toEqual([1])
  await Promise.all([sub.close(), poll.close()])
  await Promise.all([writer.close(), reader.close(), edge.close()])
}, 30_000)

// the probe's scenario in the operator's scale-out shape (engine, standby, two API instances, one Redis)
test('a quote refused with 503 while Redis is paused is not applied when Redis resumes (no SL at that stale price)', async () => {
  const SYMBOL = 'BTCUSD'
  const LOGIN = 100001
  const PRICE = { bid: 43_000, ask: 43_030 }
  const BELOW = { bid: 41_000, ask: 41_030 }
  let shape: ScaleShape | undefined
  let db: Client | undefined
  try {
    shape = await startScaleShape({ transport: 'ws' })
    const s = shape
    db = createClient({ url: s.sqld.url, intMode: 'number' })
    const [a, b] = s.api
    const req = async (base: string, method: string, path: string, token: string, body: unknown) => {
      const started = performance.now()
      try {
        const res = await fetch(`${base}${path}`, {
          method,
          headers: { authorization: token, 'content-type': 'application/json' },
          body: JSON.stringify(body),
          signal: AbortSignal.timeout(20_000),
        })
        const text = await res.text()
        return {
          status: res.status,
          text,
          json: JSON.parse(text || 'null'),
          ms: Math.round(performance.now() - started),
        }
      } catch {
        return { status: 0, text: '', json: null, ms: Math.round(performance.now() - started) }
      }
    }
    const dealer = await signIn(a!.url, '/manager/sign/in', { login: 3, password: 'dealer-pass-1' })
    const user = await signIn(b!.url, '/sign/in', { login: LOGIN, password: 'demo-pass-1' })
    const ingest = (base: string, q: { bid: number; ask: number }) =>
      req(base, 'POST', '/market/quotes', dealer, { ticks: [{ symbol: SYMBOL, ...q }] })
    expect((await ingest(a!.url, PRICE)).status).toBe(200)
    const r = await req(a!.url, 'POST', '/trade/open', user, {
      login: LOGIN,
      cmd: 0,
      volume: 1,
      symbol: SYMBOL,
      sl: 42_000,
      tp: 0,
      comment: 'bus-stall',
    })
    expect(r.status).toBe(200)
    const ticket = r.json.order as number
    await Bun.sleep(1000)
    await pauseProcess(s.redis.pid)
    const stopAt = Date.now()
    const breach = await ingest(b!.url, BELOW)
    console.log(`[bus-stall] breach push while Redis is paused: ${breach.status} in ${breach.ms} ms`)
    await Bun.sleep(Math.max(0, 5000 - (Date.now() - stopAt)))
    process.kill(s.redis.pid, 'SIGCONT')
    // the feed goes on at the real price once Redis answers
    await waitFor(async () => (await ingest(a!.url, PRICE)).status === 200, 15_000, 'ingest again')
    for (let i = 0; i < 8; i++) {
      await Bun.sleep(250)
      await ingest(a!.url, PRICE)
    }
    await Bun.sleep(1500)
    const row = (
      await db.execute({ sql: 'select state, close_reason from orders where ticket = ?', args: [ticket] })
    ).rows[0] as unknown as { state: string; close_reason: string }
    if (breach.status === 200) {
      // accepted: then it must have fired
      expect(row.state).toBe('closed')
    } else {
      // refused: the market never went below the SL as far as anyone was told
      expect({ state: row.state, reason: row.close_reason }).toEqual({ state: 'open', reason: '' })
    }
  } finally {
    try {
      if (shape) process.kill(shape.redis.pid, 'SIGCONT')
    } catch {}
    db?.close()
    await shape?.stop()
  }
}, 90_000)
