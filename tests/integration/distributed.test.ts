// The distributed acceptance suite (issue 18): a real sqld, a real redis-server, two API instances
// (ROLE=api) and the engine (ROLE=engine) with a standby, each its own Bun process.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { waitFor } from '../support/ports'
import { type RedisServer, startRedis } from '../support/redis'
import { call, type RealServer, serverDir, signIn, startRealServer } from '../support/server'
import { type SqldServer, startSqld } from '../support/sqld'

let sqld: SqldServer
let redis: RedisServer
const home = serverDir()
let a: RealServer
let b: RealServer
let engine: RealServer
let standby: RealServer | undefined
let dealer: string
let user: string

const env = (role: string) => ({ DATABASE_URL: sqld.url, REDIS_URL: redis.url, ROLE: role })

const ingest = async (base: string, ticks: { symbol: string; bid: number; ask: number }[]) => {
  const r = await call(base, 'POST', '/market/quotes', { token: dealer, body: { ticks } })
  expect(r.status).toBe(200)
  return r
}

async function closedOrder(base: string, ticket: number, timeoutMs = 2000) {
  let found: any
  await waitFor(
    async () => {
      const h = await call(base, 'GET', '/trade/history?login=100001&limit=100', { token: user })
      found = h.json.rows?.find((o: { order: number }) => o.order === ticket)
      return !!found
    },
    timeoutMs,
    `order ${ticket} closed`,
  )
  return found
}

/** How many times an order was closed: its closing deals in the ledger (exactly once means 1). */
async function closings(base: string, ticket: number) {
  const h = await call(base, 'GET', '/trade/history?login=100001&limit=100', { token: user })
  return (h.json.rows as { order: number }[]).filter((o) => o.order === ticket).length
}

beforeAll(async () => {
  ;[sqld, redis] = await Promise.all([startSqld(), startRedis()])
  // two API instances cold-boot at once on the empty database: migrations and demo seeding race
  ;[a, b] = await Promise.all([startRealServer(home.dir, env('api')), startRealServer(home.dir, env('api'))])
  engine = await startRealServer(home.dir, env('engine'))
  await engine.waitForOutput(/engine role taken/)
  dealer = await signIn(a.url, '/manager/sign/in', { login: 3, password: 'dealer-pass-1' })
  user = await signIn(b.url, '/sign/in', { login: 100001, password: 'demo-pass-1' })
  await ingest(a.url, [{ symbol: 'EURUSD', bid: 1.1, ask: 1.1002 }])
}, 120_000)

afterAll(async () => {
  await Promise.all([a, b, engine, standby].map((s) => s?.stop()))
  await Promise.all([sqld?.stop(), redis?.stop()])
  home.remove()
})

describe('two API instances and the engine on sqld + Redis', () => {
  test('both cold-booted on an empty sqld; the demo data exists once', async () => {
    for (const s of [a, b]) expect((await call(s.url, 'GET', '/health')).status).toBe(200)
    expect(a.output()).not.toContain('UNIQUE constraint failed')
    expect(b.output()).not.toContain('UNIQUE constraint failed')
    // no instance but the engine simulates, and only the engine took its role
    expect(a.output()).not.toContain('engine role taken')
    const staff = await signIn(a.url, '/manager/sign/in', { login: 1, password: 'manager-pass-1' })
    const groups = await call(b.url, 'GET', '/manager/groups', { token: staff })
    expect(groups.json.rows.map((g: { name: string }) => g.name).sort()).toEqual([
      'demo\\USD',
      'prop\\eval\\USD',
      'prop\\funded\\USD',
      'real\\EUR',
      'real\\USD',
    ])
  })

  test('an SL set through A fires on a tick ingested through B, exactly once, though the price returns', async () => {
    const r = await call(a.url, 'POST', '/trade/open', {
      token: user,
      body: { login: 100001, cmd: 0, volume: 10, symbol: 'EURUSD', sl: 1.095, tp: 0 },
    })
    expect(r.status).toBe(200)
    const ticket = r.json.order as number
    await ingest(b.url, [{ symbol: 'EURUSD', bid: 1.09, ask: 1.0902 }])
    await ingest(b.url, [{ symbol: 'EURUSD', bid: 1.1, ask: 1.1002 }])
    const closed = await closedOrder(a.url, ticket)
    expect(closed.close_reason).toBe('sl')
    expect(closed.close_price).toBe(1.09)
    expect(await closings(b.url, ticket)).toBe(1)
  })

  test('an open on B uses the newest price ingested on A', async () => {
    await ingest(a.url, [{ symbol: 'USDJPY', bid: 150, ask: 150.02 }])
    await ingest(a.url, [{ symbol: 'USDJPY', bid: 151.5, ask: 151.52 }])
    const r = await call(b.url, 'POST', '/trade/open', {
      token: user,
      body: { login: 100001, cmd: 0, volume: 10, symbol: 'USDJPY', sl: 0, tp: 0 },
    })
    expect(r.status).toBe(200)
    expect(r.json.trade.open_price).toBeGreaterThan(151)
    const closed = await call(b.url, 'DELETE', '/trade/close', {
      token: user,
      body: { order: r.json.order },
    })
    expect(closed.status).toBe(200)
  })

  test('SSE on A streams ticks ingested on B; the ids are global, so B resumes what A sent', async () => {
    const ac = new AbortController()
    const res = await fetch(`${a.url}/market/stream?symbols=GBPUSD`, {
      headers: { authorization: user },
      signal: ac.signal,
    })
    expect(res.status).toBe(200)
    const reader = res.body!.getReader()
    const dec = new TextDecoder()
    let text = ''
    const readUntil = async (re: RegExp) => {
      const until = Date.now() + 5000
      while (!re.test(text) && Date.now() < until) text += dec.decode((await reader.read()).value)
      expect(text).toMatch(re)
    }
    await readUntil(/retry: 2000/)
    await Bun.sleep(100)
    await ingest(b.url, [{ symbol: 'GBPUSD', bid: 1.2701, ask: 1.2703 }])
    await readUntil(/"bid":1\.2701/)
    await ingest(b.url, [{ symbol: 'GBPUSD', bid: 1.2705, ask: 1.2707 }])
    await readUntil(/"bid":1\.2705/)
    ac.abort()
    const first = /id: (\d+-\d+)\nevent: quote\ndata: [^\n]*"bid":1\.2701/.exec(text)![1]
    const again = await fetch(`${b.url}/market/stream?symbols=GBPUSD`, {
      headers: { authorization: user, 'last-event-id': first },
    })
    const r2 = again.body!.getReader()
    let t2 = ''
    const until = Date.now() + 5000
    while (!/"bid":1\.2705/.test(t2) && Date.now() < until) t2 += dec.decode((await r2.read()).value)
    await r2.cancel()
    expect(t2).toMatch(/"bid":1\.2705/)
    // resumed after the first tick: it is not sent again
    expect(t2).not.toMatch(/"bid":1\.2701/)
  })

  test('the engine is killed: the standby takes over, no trigger missed, none fired twice', async () => {
    standby = await startRealServer(home.dir, env('engine'))
    await ingest(a.url, [{ symbol: 'AUDUSD', bid: 0.65, ask: 0.6502 }])
    // a position whose SL fires while the first engine lives
    const before = await call(a.url, 'POST', '/trade/open', {
      token: user,
      body: { login: 100001, cmd: 0, volume: 10, symbol: 'AUDUSD', sl: 0.64, tp: 0 },
    })
    expect(before.status).toBe(200)
    const open = await call(a.url, 'POST', '/trade/open', {
      token: user,
      body: { login: 100001, cmd: 0, volume: 10, symbol: 'EURUSD', sl: 1.095, tp: 0 },
    })
    expect(open.status).toBe(200)
    await ingest(b.url, [{ symbol: 'AUDUSD', bid: 0.63, ask: 0.6302 }])
    await closedOrder(a.url, before.json.order)
    await engine.kill()
    // the breach and the way back happen while no engine runs
    await ingest(b.url, [{ symbol: 'EURUSD', bid: 1.09, ask: 1.0902 }])
    await ingest(b.url, [{ symbol: 'EURUSD', bid: 1.1, ask: 1.1002 }])
    await standby.waitForOutput(/engine role taken/)
    const closed = await closedOrder(a.url, open.json.order, 6000)
    expect(closed.close_reason).toBe('sl')
    expect(closed.close_price).toBe(1.09)
    expect(await closings(a.url, open.json.order)).toBe(1)
    expect(await closings(a.url, before.json.order)).toBe(1)
  }, 30_000)
})
