// Two API instances (their own processes) on one sqld and one redis-server: reference data and watch
// lists each instance holds must follow edits made on the other after Redis restarted empty or did not
// answer for a moment ("All instances see the change within a second", POST/PATCH /manager/symbols).
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { RedisClient } from 'bun'
import { type RedisServer, startRedis } from '../support/redis'
import { call, type RealServer, serverDir, signIn, startRealServer } from '../support/server'
import { type SqldServer, startSqld } from '../support/sqld'

let sqld: SqldServer
let redis: RedisServer
let a: RealServer
let b: RealServer
let home: ReturnType<typeof serverDir>
let admin: string
let user: string

beforeAll(async () => {
  ;[sqld, redis] = await Promise.all([startSqld(), startRedis()])
  home = serverDir()
  const env = {
    DATABASE_URL: sqld.url,
    REDIS_URL: redis.url,
    ROLE: 'api',
    SIGNIN_MAX_FAILURES_PER_IP: '100000',
  }
  a = await startRealServer(home.dir, env)
  b = await startRealServer(home.dir, env)
  admin = await signIn(b.url, '/manager/sign/in', { login: 2, password: 'admin-pass-1' })
  user = await signIn(a.url, '/sign/in', { login: 100001, password: 'demo-pass-1' })
}, 120_000)
afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop()])
  await Promise.all([sqld?.stop(), redis?.stop()])
  home?.remove()
})

const swapOn = async (s: RealServer) =>
  (await call(s.url, 'GET', '/market/symbol?login=100001&symbol=EURUSD', { token: user })).json?.swap_long

/** Pauses redis-server (calls time out; the instances' circuits open) while `during` runs. */
async function redisPaused(during: () => Promise<void>) {
  process.kill(redis.pid, 'SIGSTOP')
  try {
    await during()
  } finally {
    process.kill(redis.pid, 'SIGCONT')
  }
}

test('a symbol edited on B after a Redis restart reaches A within the documented second', async () => {
  const before = await swapOn(a)
  expect(typeof before).toBe('number')
  const r = new RedisClient(redis.url)
  const version = Number((await r.get('ref:v1:version')) ?? '0')
  r.close()
  // a counter started again from nothing came back to the version A held: as many edits as it had seen
  const edits = version > 0 && version < 50 ? version : 1
  const port = redis.port
  await redis.stop()
  redis = await startRedis(port)
  let last = before
  for (let i = 1; i <= edits; i++) {
    last = -1.25 - i
    const p = await call(b.url, 'PATCH', '/manager/symbols/EURUSD', {
      token: admin,
      body: { swap_long: last },
    })
    expect(p.status).toBe(200)
  }
  expect(await swapOn(b)).toBe(last)
  await Bun.sleep(3000)
  expect(await swapOn(a)).toBe(last)
}, 60_000)

test('a symbol edited on B while B could not reach Redis for a moment reaches A once Redis answers again', async () => {
  const before = await swapOn(a)
  expect(typeof before).toBe('number')
  await redisPaused(async () => {
    // B's cache calls time out: its circuit opens (kernel/resilience), the version bump is not taken
    for (let i = 0; i < 3; i++)
      await call(b.url, 'GET', '/market/symbol?login=100001&symbol=EURUSD', { token: user })
    const p = await call(b.url, 'PATCH', '/manager/symbols/EURUSD', {
      token: admin,
      body: { swap_long: -9.75 },
    })
    expect(p.status).toBe(200)
  })
  // no request reaches B meanwhile: it sends the bump again on its own
  await Bun.sleep(3000)
  expect(await swapOn(a)).toBe(-9.75)
}, 60_000)

test('a security group hidden on B while B could not reach Redis leaves the watch list A serves once Redis answers again', async () => {
  const watchOnA = async () =>
    Object.keys(
      (await call(a.url, 'GET', '/market/watch/list?login=100001', { token: user })).json?.assets ?? {},
    ) as string[]
  const groups = (await call(b.url, 'GET', '/manager/groups', { token: admin })).json
  const rows: { id: number; name: string }[] = Array.isArray(groups)
    ? groups
    : (groups?.rows ?? groups?.groups)
  const group = rows.find((g) => g.name === 'real\\USD')!
  const trading = (await call(b.url, 'GET', `/manager/groups/${group.id}/trading`, { token: admin })).json
  const metals = trading.securities.find((s: { sec_group: string }) => s.sec_group === 'Metals')
  expect(metals.show).toBe(1)
  const listed = await watchOnA()
  if (!listed.includes('XAUUSD')) {
    const add = await call(a.url, 'POST', '/market/watch', {
      token: user,
      body: { login: 100001, symbol: 'XAUUSD' },
    })
    expect(add.status).toBe(200)
  }
  // cached in Redis under the current watch version
  expect(await watchOnA()).toContain('XAUUSD')
  await redisPaused(async () => {
    for (let i = 0; i < 3; i++)
      await call(b.url, 'GET', '/market/symbol?login=100001&symbol=EURUSD', { token: user })
    const { sec_group: _, ...body } = metals
    const p = await call(b.url, 'PUT', `/manager/groups/${group.id}/securities/Metals`, {
      token: admin,
      body: { ...body, show: 0 },
    })
    expect(p.status).toBe(200)
  })
  await Bun.sleep(3000)
  expect(await watchOnA()).not.toContain('XAUUSD')
}, 60_000)
