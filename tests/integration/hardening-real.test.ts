import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { createClient } from '@libsql/client'
import { type RedisServer, startRedis } from '../support/redis'
import { call, type RealServer, serverDir, startRealServer } from '../support/server'

// Issue 16 findings that only show over a real socket or across a real restart of the process.

const signIn = async (base: string, login = 100001, password = 'demo-pass-1') =>
  (await call(base, 'POST', '/sign/in', { body: { login, password } })).json.__token as string
const staffIn = async (base: string, login = 1, password = 'manager-pass-1') =>
  (await call(base, 'POST', '/manager/sign/in', { body: { login, password } })).json.__token as string

describe('restarts on one database', () => {
  const home = serverDir()
  let server: RealServer | undefined
  afterAll(async () => {
    await server?.stop()
    home.remove()
  })

  test('1. a row nobody can read is logged and skipped; the server starts and the rest loads', async () => {
    server = await startRealServer(home.dir)
    const dealer = await staffIn(server.url, 3, 'dealer-pass-1')
    await call(server.url, 'POST', '/market/quotes', {
      token: dealer,
      body: { ticks: [{ symbol: 'EURUSD', bid: 1.1, ask: 1.1002 }] },
    })
    const user = await signIn(server.url)
    const pending = await call(server.url, 'POST', '/trade/open', {
      token: user,
      body: { login: 100001, cmd: 2, volume: 10, symbol: 'EURUSD', sl: 0, tp: 0, open_price: 1.05 },
    })
    expect(pending.status).toBe(200)
    await server.stop()
    // what an older version let a client store: integers beyond 2^53 that the driver cannot return
    const db = createClient({ url: `file:${join(home.dir, 'app.db')}` })
    await db.execute(`insert into orders (brand_id, login, symbol, cmd, volume, state, open_price, open_time,
      expiration, updated_at) values (1, 100002, 'EURUSD', 2, 10, 'pending', 1.05, 0, 10000000000000000, 0)`)
    const bad = Number((await db.execute('select max(ticket) as t from orders')).rows[0].t)
    await db.execute(`insert into price_alerts (brand_id, login, symbol, side, condition, target_price, expires_at,
      created_at, updated_at) values (1, 100002, 'EURUSD', 0, 0, 1.2, 10000000000000000, 0, 0)`)
    db.close()

    server = await startRealServer(home.dir)
    expect(await server.waitForOutput(/resting orders: row skipped/)).toMatch(/resting orders: row skipped/)
    expect(await server.waitForOutput(/price alerts: row skipped/)).toMatch(/price alerts: row skipped/)
    const list = await call(server.url, 'GET', '/trade/list?login=100001', {
      token: await signIn(server.url),
    })
    expect(list.json.orders.map((o: { order: number }) => o.order)).toContain(pending.json.order)
    const victim = await signIn(server.url, 100002)
    for (const r of [
      await call(server.url, 'GET', '/trade/list?login=100002', { token: victim }),
      await call(server.url, 'GET', '/price_alerts?login=100002', { token: victim }),
    ])
      expect(r.status).toBe(200)
    const cancel = await call(server.url, 'DELETE', '/trade/cancel', { token: victim, body: { order: bad } })
    expect([cancel.status, cancel.json.error]).toEqual([401, 'CANCEL_PENDING_TRADE_ERROR'])
  })

  test('2. a sign-out survives a restart; other tokens keep working', async () => {
    const revoked = await signIn(server!.url, 100002)
    const kept = await signIn(server!.url, 100003)
    expect((await call(server!.url, 'POST', '/sign/out', { token: revoked })).status).toBe(200)
    await server!.stop()
    server = await startRealServer(home.dir)
    expect((await call(server.url, 'GET', '/account/me', { token: revoked })).status).toBe(401)
    expect((await call(server.url, 'GET', '/account/me', { token: kept })).status).toBe(200)
  })

  test('14. right after a restart the account of open positions is priced (no INVALID_MARGIN_LEVEL)', async () => {
    const dealer = await staffIn(server!.url, 3, 'dealer-pass-1')
    await call(server!.url, 'POST', '/market/quotes', {
      token: dealer,
      body: { ticks: [{ symbol: 'EURUSD', bid: 1.1, ask: 1.1002 }] },
    })
    const user = await signIn(server!.url)
    const open = await call(server!.url, 'POST', '/trade/open', {
      token: user,
      body: { login: 100001, cmd: 0, volume: 10, symbol: 'EURUSD', sl: 0, tp: 0 },
    })
    expect(open.status).toBe(200)
    await server!.stop()
    server = await startRealServer(home.dir)
    const me = await call(server.url, 'GET', '/account/me', { token: user })
    expect(me.status).toBe(200)
    expect(me.json.margin).toBeGreaterThan(0)
  })
})

describe('2. revocation is checked against the database when the cache is down', () => {
  const home = serverDir()
  let redis: RedisServer
  let server: RealServer
  beforeAll(async () => {
    redis = await startRedis()
    server = await startRealServer(home.dir, { REDIS_URL: redis.url, CACHE_TIMEOUT_MS: '100' })
  })
  afterAll(async () => {
    await server.stop()
    await redis.stop()
    home.remove()
  })

  test('a signed-out token stays refused with Redis gone; a valid one still works', async () => {
    const revoked = await signIn(server.url, 100002)
    const kept = await signIn(server.url, 100003)
    expect((await call(server.url, 'GET', '/account/me', { token: revoked })).status).toBe(200)
    await call(server.url, 'POST', '/sign/out', { token: revoked })
    await redis.stop()
    expect((await call(server.url, 'GET', '/account/me', { token: revoked })).status).toBe(401)
    expect((await call(server.url, 'GET', '/account/me', { token: kept })).status).toBe(200)
  })
})

describe('over a real socket', () => {
  const home = serverDir()
  let server: RealServer
  beforeAll(async () => {
    server = await startRealServer(home.dir, { BODY_MAX_BYTES: '65536', UPLOAD_MAX_BYTES: '100000' })
  })
  afterAll(async () => {
    await server.stop()
    home.remove()
  })

  test('11. over the size limit: 413 PAYLOAD_TOO_LARGE with a body and a request id, announced or chunked', async () => {
    const token = await signIn(server.url)
    const big = JSON.stringify({ login: 100001, name: 'big', script: 'x'.repeat(200_000) })
    const announced = await call(server.url, 'POST', '/script', {
      token,
      raw: big,
      headers: { 'content-type': 'application/json' },
    })
    const chunks = new ReadableStream({
      start(c) {
        const bytes = new TextEncoder().encode(big)
        for (let i = 0; i < bytes.length; i += 16_384) c.enqueue(bytes.slice(i, i + 16_384))
        c.close()
      },
    })
    const res = await fetch(`${server.url}/script`, {
      method: 'POST',
      headers: { authorization: token, 'content-type': 'application/json' },
      body: chunks,
      duplex: 'half',
    } as RequestInit)
    const chunked = { status: res.status, headers: res.headers, json: await res.json() }
    const far = await call(server.url, 'POST', '/upload', {
      token,
      raw: new Uint8Array(500_000),
      headers: { 'content-type': 'multipart/form-data; boundary=x' },
    })
    for (const r of [announced, chunked, far]) {
      expect(r.status).toBe(413)
      expect(r.json.error).toBe('PAYLOAD_TOO_LARGE')
      expect(r.json.message).toMatch(/^body: larger than/)
      expect(r.headers.get('x-request-id')).toBeTruthy()
    }
  })

  test('13. GET /scripts: the query form works; a GET body the server cannot read is named, not ignored', async () => {
    const token = await signIn(server.url)
    await call(server.url, 'POST', '/script', {
      token,
      body: { login: 100001, name: 'real', script: 'x = 1' },
    })
    const byQuery = await call(server.url, 'GET', '/scripts?login=100001', { token })
    expect(byQuery.status).toBe(200)
    expect(byQuery.json.rows.map((r: { name: string }) => r.name)).toContain('real')
    // fetch() refuses a GET body; send one as a raw HTTP client does
    const raw = await rawHttp(
      server.url,
      `GET /scripts HTTP/1.1\r\nHost: localhost\r\nAuthorization: ${token}\r\nContent-Type: application/json\r\nContent-Length: 17\r\nConnection: close\r\n\r\n{"login":100001}`,
    )
    expect(raw).toMatch(/^HTTP\/1.1 400/)
    expect(raw).toMatch(
      /"message":"login: this server cannot read the body of a GET request[^"]*GET \/scripts\?login=/,
    )
  })

  test('bodies, cookies and headers cross the wire as documented', async () => {
    const signin = await call(server.url, 'POST', '/sign/in', {
      body: { login: 100001, password: 'demo-pass-1' },
    })
    const cookie = signin.headers.get('set-cookie') ?? ''
    expect(cookie).toMatch(/tcs_token=[^;]+; .*HttpOnly/i)
    const viaCookie = await call(server.url, 'GET', '/account/me', {
      headers: { cookie: cookie.split(';')[0] },
    })
    expect(viaCookie.status).toBe(200)
    const malformed = await call(server.url, 'PUT', '/account/me', {
      token: signin.json.__token,
      raw: '{"name":',
      headers: { 'content-type': 'application/json' },
    })
    expect([malformed.status, malformed.json.error]).toEqual([400, 'INVALID_DATA'])
    const wrongType = await call(server.url, 'POST', '/script', {
      token: signin.json.__token,
      raw: 'login=100001&name=a&script=b',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    })
    expect(wrongType.json).toEqual({
      error: 'INVALID_DATA',
      message: 'body: content-type must be application/json',
    })
    const noToken = await call(server.url, 'POST', '/manager/symbols', { body: {} })
    expect([noToken.status, noToken.json.error]).toEqual([401, 'UNAUTHORIZED'])
  })
})

/** Sends raw bytes over TCP and returns what the server answers (for requests fetch() will not make). */
async function rawHttp(base: string, request: string): Promise<string> {
  const { hostname, port } = new URL(base)
  let answer = ''
  await new Promise<void>((resolve, reject) => {
    Bun.connect({
      hostname,
      port: Number(port),
      socket: {
        open(s) {
          s.write(request)
        },
        data(_s, d) {
          answer += new TextDecoder().decode(d)
        },
        close() {
          resolve()
        },
        error(_s, e) {
          reject(e)
        },
      },
    }).catch(reject)
  })
  return answer
}
