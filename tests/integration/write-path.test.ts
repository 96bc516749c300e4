// The write path on sqld + Redis with real server processes (issue 38): a write lock held elsewhere makes
// writes answer 503 SERVICE_UNAVAILABLE with Retry-After (never 500, one log line that agrees) and
// /health/ready 503 naming the write path, and both heal once the lock is free; SIGTERM drains
// in-flight requests, ends quote streams, gives up the engine role to the standby at once, and exits
// within 10 s even with a database call hung.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import * as hrana from '@libsql/hrana-client'
import { type RedisServer, startRedis } from '../support/redis'
import { call, type RealServer, serverDir, signIn, startRealServer } from '../support/server'
import { type SqldServer, startSqld } from '../support/sqld'

let sqld: SqldServer
let redis: RedisServer
const home = serverDir()
const servers: RealServer[] = []
const env = (extra: Record<string, string>) => ({
  DATABASE_URL: sqld.url.replace(/^http/, 'ws'),
  REDIS_URL: redis.url,
  ROLE: 'all',
  LOG_LEVEL: 'info',
  ...extra,
})

/** Another client of sqld holding its write lock until `release`. */
async function holdWriteLock() {
  const client = hrana.openWs(sqld.url.replace(/^http/, 'ws'))
  const stream = client.openStream()
  await stream.run('BEGIN IMMEDIATE')
  await stream.run('update brands set name = name where id = 1')
  return async () => {
    await stream.run('ROLLBACK').catch(() => {})
    client.close()
  }
}

const quote = (base: string, dealer: string) =>
  call(base, 'POST', '/market/quotes', {
    token: dealer,
    body: { ticks: [{ symbol: 'EURUSD', bid: 1.1, ask: 1.1002 }] },
  })

beforeAll(async () => {
  ;[sqld, redis] = await Promise.all([startSqld(), startRedis()])
}, 60_000)

afterAll(async () => {
  for (const s of servers) await s.kill()
  await Promise.all([sqld?.stop(), redis?.stop()])
  home.remove()
})

test('a write lock held elsewhere: 503 SERVICE_UNAVAILABLE with Retry-After, readiness names the write path, both heal', async () => {
  const a = await startRealServer(home.dir, env({ DATABASE_WRITE_TIMEOUT_MS: '1000' }))
  servers.push(a)
  const user = await signIn(a.url, '/sign/in', { login: 100001, password: 'demo-pass-1' })
  const dealer = await signIn(a.url, '/manager/sign/in', { login: 3, password: 'dealer-pass-1' })
  expect((await quote(a.url, dealer)).status).toBe(200)
  const open = () =>
    call(a.url, 'POST', '/trade/open', {
      token: user,
      body: { login: 100001, cmd: 0, volume: 1, symbol: 'EURUSD', sl: 0, tp: 0 },
      headers: { 'x-request-id': `busy-${Math.random().toString(36).slice(2, 12)}` },
    })
  const release = await holdWriteLock()
  try {
    const t0 = Date.now()
    const r = await open()
    expect([r.status, r.json?.error]).toEqual([503, 'SERVICE_UNAVAILABLE'])
    expect(r.headers.get('retry-after')).toBe('1')
    expect(Date.now() - t0).toBeLessThan(4000)
    const ready = await call(a.url, 'GET', '/health/ready')
    expect(ready.status).toBe(503)
    expect(ready.json.checks.writes.state).toBe('down')
    expect(ready.json.checks.database.state).toBe('up')
    // the answer and the request's one log line agree
    const id = r.headers.get('x-request-id')
    await a.waitForOutput(new RegExp(`"request_id":"${id}"`))
    const lines = a
      .output()
      .split('\n')
      .filter((l) => l.includes(`"request_id":"${id}"`))
      .map((l) => JSON.parse(l))
    expect(lines.map((l) => [l.msg, l.status, l.code])).toEqual([['request', 503, 'SERVICE_UNAVAILABLE']])
  } finally {
    await release()
  }
  const until = Date.now() + 5000
  while ((await call(a.url, 'GET', '/health/ready')).status !== 200 && Date.now() < until)
    await Bun.sleep(100)
  const healed = await call(a.url, 'GET', '/health/ready')
  expect(healed.status).toBe(200)
  expect(healed.json.checks.writes.waiting).toBe(0)
  expect(healed.json.checks.events.state).toBe('up')
  expect((await open()).status).toBe(200)
  expect(a.output()).not.toContain('unhandled')
  await a.stop()
}, 60_000)

test('SIGTERM: in-flight requests finish, quote streams end, the standby takes the engine role at once, exit within 10 s with a database call hung', async () => {
  const first = await startRealServer(home.dir, env({ DATABASE_WRITE_TIMEOUT_MS: '30000' }))
  servers.push(first)
  await first.waitForOutput(/engine role taken/)
  const standby = await startRealServer(home.dir, env({}))
  servers.push(standby)
  const user = await signIn(first.url, '/sign/in', { login: 100001, password: 'demo-pass-1' })
  const dealer = await signIn(first.url, '/manager/sign/in', { login: 3, password: 'dealer-pass-1' })
  expect((await quote(first.url, dealer)).status).toBe(200)
  // a quote stream on the instance that goes
  const res = await fetch(`${first.url}/market/stream?symbols=EURUSD`, { headers: { authorization: user } })
  expect(res.status).toBe(200)
  const reader = res.body!.getReader()
  await reader.read()
  const streamEnded = (async () => {
    for (;;) if ((await reader.read().catch(() => ({ done: true }))).done) return Date.now()
  })()
  // a write that hangs behind a lock held elsewhere, and a read in flight
  const release = await holdWriteLock()
  try {
    const hung = call(first.url, 'POST', '/trade/open', {
      token: user,
      body: { login: 100001, cmd: 0, volume: 1, symbol: 'EURUSD', sl: 0, tp: 0 },
    }).catch((e) => ({ status: -1, json: String(e) }))
    await Bun.sleep(200)
    // a sign-in hashes for ~50 ms: it is in the server's hands when the signal comes
    const inflight = call(first.url, 'POST', '/sign/in', { body: { login: 100002, password: 'demo-pass-1' } })
    await Bun.sleep(15)
    const t0 = Date.now()
    first.signal('SIGTERM')
    expect((await inflight).status).toBe(200)
    const ended = await streamEnded
    expect(ended - t0).toBeLessThan(2000)
    const code = await first.exited
    expect(Date.now() - t0).toBeLessThan(10_000)
    expect(code).not.toBeNull()
    // the hung write got an answer or its connection closed; never a 500
    expect((await hung).status).not.toBe(500)
    // the lease was given up: the standby took the role before it could have lapsed (3 s)
    const took = Date.now()
    await standby.waitForOutput(/engine role taken/)
    expect(standby.output()).toMatch(/engine role taken/)
    expect(Date.now() - took).toBeLessThan(3000)
  } finally {
    await release()
  }
  expect(first.output()).toContain('"msg":"shutting down"')
  expect(first.output()).not.toContain('unhandled')
}, 60_000)
