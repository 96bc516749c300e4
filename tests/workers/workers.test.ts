// The Workers suite (issue 18): the Workers entry under `wrangler dev` (workerd) as an API instance, on a
// real sqld and the Upstash REST protocol (bridge to a real redis-server), beside the engine in a Bun
// process on the same database and Redis.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createClient } from '@libsql/client'
import { RedisClient } from 'bun'
import { countingProxy } from '../support/counting-proxy'
import { type EdgeShape, startEdgeShape } from '../support/edge-shape'
import * as F from '../support/files'
import { pauseProcess, waitFor } from '../support/ports'
import { call, type RealServer } from '../support/server'
import type { SqldServer } from '../support/sqld'
import { startUpstashBridge } from '../support/upstash-bridge'
import { startWranglerDev, type WranglerDev } from '../support/wrangler'

const SECRET = 'workers-suite-jwt-secret-0123456789abcdef'
const CRON = 'workers-suite-cron-secret-0123456789'
let shape: EdgeShape
let sqld: SqldServer
let engine: RealServer
let worker: WranglerDev
let user: string
// the Worker reaches sqld and Upstash through counting proxies: what one request spends of its subrequests
const dbCalls = countingProxy()
const kvCalls = countingProxy()
let bridge: ReturnType<typeof startUpstashBridge> | undefined

/** Rows of a query on the shared database (sqld), as arrays of values. */
async function sql(text: string, args: (string | number)[]) {
  const client = createClient({ url: sqld.url, intMode: 'number' })
  try {
    return (await client.execute({ sql: text, args })).rows.map((r) => Object.values(r))
  } finally {
    client.close()
  }
}

/** A dealer's session on the engine (it posts quotes). */
const dealerToken = async (): Promise<string> =>
  (await call(engine.url, 'POST', '/manager/sign/in', { body: { login: 3, password: 'dealer-pass-1' } })).json
    .__token

/** The demo user's quote stream of EURUSD from the Worker, ended by `abort`. */
const eurusdStream = (abort: AbortController) =>
  fetch(`${worker.url}/market/stream?symbols=EURUSD`, {
    headers: { authorization: `Bearer ${user}` },
    signal: abort.signal,
  })

beforeAll(async () => {
  shape = await startEdgeShape({
    shared: {
      JWT_SECRET: SECRET,
      // the tests post their own quotes; and the document lists a deployment's jobs (POST /cron/{job}),
      // so both sides run the same ones: no simulator here, as at the edge
      QUOTE_SIMULATOR: '0',
      CRON_SECRET: CRON,
    },
    worker: {
      LOG_LEVEL: 'info',
      DATABASE_URL: dbCalls.url,
      UPSTASH_REDIS_REST_URL: kvCalls.url,
    },
  })
  ;({ sqld, engine, worker } = shape)
  bridge = startUpstashBridge(shape.redis.url, 'bridge-token')
  dbCalls.setTarget(sqld.url)
  kvCalls.setTarget(bridge.url)
  // the proxies had no target while wrangler started: the Worker sees both before the tests
  await waitFor(
    async () => (await call(worker.url, 'GET', '/health')).json?.status === 'ok',
    30_000,
    'a healthy Worker',
  )
}, 180_000)

afterAll(async () => {
  await shape?.stop()
  bridge?.stop()
  dbCalls.stop()
  kvCalls.stop()
})

describe('the Workers entry under wrangler dev', () => {
  test('sign-in with a password hashed by the Bun server, then the account', async () => {
    const r = await call(worker.url, 'POST', '/sign/in', { body: { login: 100001, password: 'demo-pass-1' } })
    if (r.status !== 200) console.log(r.text.slice(0, 500), worker.output().slice(-1500))
    expect(r.status).toBe(200)
    user = r.json.__token
    const wrong = await call(worker.url, 'POST', '/sign/in', {
      body: { login: 100001, password: 'nope-nope-1' },
    })
    expect(wrong.status).toBe(403)
    const me = await call(worker.url, 'GET', '/account/me', { token: user })
    expect(me.status).toBe(200)
    expect(me.json.login).toBe(100001)
  }, 60_000)

  test('20 concurrent trade opens are all answered', async () => {
    const dealer = await call(worker.url, 'POST', '/manager/sign/in', {
      body: { login: 3, password: 'dealer-pass-1' },
    })
    expect(dealer.status).toBe(200)
    const q = await call(worker.url, 'POST', '/market/quotes', {
      token: dealer.json.__token,
      body: { ticks: [{ symbol: 'EURUSD', bid: 1.1, ask: 1.1002 }] },
    })
    expect(q.status).toBe(200)
    // the engine applies the tick and writes the shared quote the Worker reads
    await Bun.sleep(300)
    const opens = await Promise.all(
      Array.from({ length: 20 }, () =>
        call(worker.url, 'POST', '/trade/open', {
          token: user,
          body: { login: 100001, cmd: 0, volume: 1, symbol: 'EURUSD', sl: 0, tp: 0 },
        }),
      ),
    )
    expect(opens.map((o) => o.status)).toEqual(Array(20).fill(200))
    expect(new Set(opens.map((o) => o.json.order)).size).toBe(20)
  }, 60_000)

  test('an SL set through the Worker is fired by the engine', async () => {
    const open = await call(worker.url, 'POST', '/trade/open', {
      token: user,
      body: { login: 100001, cmd: 0, volume: 10, symbol: 'EURUSD', sl: 1.095, tp: 0 },
    })
    expect(open.status).toBe(200)
    const dealer = (
      await call(engine.url, 'POST', '/manager/sign/in', { body: { login: 3, password: 'dealer-pass-1' } })
    ).json.__token
    await call(engine.url, 'POST', '/market/quotes', {
      token: dealer,
      body: { ticks: [{ symbol: 'EURUSD', bid: 1.09, ask: 1.0902 }] },
    })
    let closed: any
    await waitFor(
      async () => {
        const h = await call(worker.url, 'GET', '/trade/history?login=100001&limit=50', { token: user })
        closed = h.json.rows?.find((o: { order: number }) => o.order === open.json.order)
        return !!closed
      },
      5000,
      'the SL executed',
    )
    expect(closed.close_reason).toBe('sl')
  }, 30_000)

  test('the routes that answer a Response on Bun: watch list, quote stream, file download', async () => {
    const full = await call(worker.url, 'GET', '/market/watch/list?login=100001', { token: user })
    expect(full.status).toBe(200)
    expect(Object.keys(full.json.assets).length).toBeGreaterThan(0)
    const bun = await call(engine.url, 'GET', '/market/watch/list?login=100001&prefix=', { token: user })
    expect(full.json).toEqual(bun.json)
    const eur = await call(worker.url, 'GET', '/market/watch/list?login=100001&prefix=eur', { token: user })
    expect(Object.keys(eur.json.assets).every((s) => s.startsWith('EUR'))).toBe(true)
    expect(Object.keys(eur.json.assets).length).toBeGreaterThan(0)

    const abort = new AbortController()
    const stream = await fetch(`${worker.url}/market/stream?symbols=EURUSD`, {
      headers: { authorization: `Bearer ${user}` },
      signal: abort.signal,
    })
    expect([stream.status, stream.headers.get('content-type')]).toEqual([
      200,
      expect.stringContaining('text/event-stream'),
    ])
    abort.abort()

    const form = new FormData()
    form.append('file', new File([F.PNG as Uint8Array<ArrayBuffer>], 'edge.png'))
    form.append('purpose', 'attachment')
    const up = await fetch(`${worker.url}/upload`, {
      method: 'POST',
      headers: { authorization: `Bearer ${user}` },
      body: form,
    })
    const stored = (await up.json()) as { file_id: string }
    expect(up.status).toBe(200)
    const down = await fetch(`${worker.url}/upload/${stored.file_id}`, {
      headers: { authorization: `Bearer ${user}` },
    })
    expect([down.status, down.headers.get('content-type')]).toEqual([200, 'image/png'])
    expect(new Uint8Array(await down.arrayBuffer())).toEqual(F.PNG)
  }, 30_000)

  // a probe: the engine's sweep (disk) dropped the rows of files the Worker keeps in R2, and the bytes (a
  // customer's passport scan) stayed in the bucket for good
  test("an upload at the edge is R2's: the engine's sweep leaves its row, the Worker's removes row and bytes", async () => {
    const form = new FormData()
    form.append('file', new File([F.PNG as Uint8Array<ArrayBuffer>], 'avatar.png'))
    form.append('purpose', 'account_avatar')
    const up = await fetch(`${worker.url}/upload`, {
      method: 'POST',
      headers: { authorization: `Bearer ${user}` },
      body: form,
    })
    expect(up.status).toBe(200)
    const id = ((await up.json()) as { file_id: string }).file_id
    const COLUMNS =
      'uuid, brand_id, scope, owner_id, purpose, file_name, original_name, extension, content_type, file_size, checksum, signature, created_at, attached_at, released_at, store'
    const [row] = await sql(`select ${COLUMNS} from uploads where uuid = ?`, [id])
    expect(row.at(-1)).toBe('r2')
    // never attached, 4 days old: due (3 days)
    await sql('update uploads set created_at = created_at - 4 * 86400000 where uuid = ?', [id])
    const rows = async () => (await sql('select count(*) from uploads where uuid = ?', [id]))[0][0]
    const sweep = (url: string) =>
      call(url, 'POST', '/cron/uploads.sweep', { headers: { 'x-cron-secret': CRON } })
    expect((await sweep(engine.url)).status).toBe(200)
    expect(await rows()).toBe(1)
    expect((await sweep(worker.url)).status).toBe(200)
    expect(await rows()).toBe(0)
    // the row put back as it was: the bucket no longer holds its bytes
    await sql(
      `insert into uploads (${COLUMNS}) values (${COLUMNS.split(',')
        .map(() => '?')
        .join(',')})`,
      row.map((v) => (v === null ? null : (v as string | number))) as (string | number)[],
    )
    const down = await fetch(`${worker.url}/upload/${id}`, { headers: { authorization: `Bearer ${user}` } })
    expect(down.status).toBe(404)
    await sql('delete from uploads where uuid = ?', [id])
  }, 30_000)

  test('as on Bun: HEAD answers as GET without a body, a body left out where it may be, live quotes on the stream, cabinet assets cached 5 min', async () => {
    // a hostile client's probe: HEAD answered 404 at the edge; PUT /account/me without a body 400
    // "body: required" (spec 4.4: optional); the quote stream sent its snapshot and nothing after it
    for (const [path, token] of [
      ['/health/live', undefined],
      ['/account/me', user],
    ] as const) {
      const get = await fetch(`${worker.url}${path}`, { headers: token ? { authorization: token } : {} })
      const head = await fetch(`${worker.url}${path}`, {
        method: 'HEAD',
        headers: token ? { authorization: token } : {},
      })
      expect([head.status, head.headers.get('content-type'), await head.text()]).toEqual([
        get.status,
        get.headers.get('content-type'),
        '',
      ])
      expect(head.headers.get('x-request-id')).toBeTruthy()
      // JSON names its charset on both runtimes
      const bun = await fetch(`${engine.url}${path}`, { headers: token ? { authorization: token } : {} })
      expect([get.headers.get('content-type'), bun.headers.get('content-type')]).toEqual([
        'application/json;charset=utf-8',
        'application/json;charset=utf-8',
      ])
    }
    for (const [side, base] of [
      ['edge', worker.url],
      ['bun', engine.url],
    ]) {
      const bare = await fetch(`${base}/account/me`, { method: 'PUT', headers: { authorization: user } })
      expect([side, bare.status, await bare.text()]).toEqual([side, 200, expect.anything()])
    }
    const dealer = await dealerToken()
    const abort = new AbortController()
    const stream = await eurusdStream(abort)
    expect(stream.status).toBe(200)
    const reader = stream.body!.getReader()
    const dec = new TextDecoder()
    let seen = ''
    const bids = () => [...seen.matchAll(/"bid":([\d.]+)/g)].map((m) => Number(m[1]))
    // the snapshot first, then each tick posted after it
    while (bids().length === 0) seen += dec.decode((await reader.read()).value)
    for (const bid of [1.1011, 1.1013]) {
      await call(engine.url, 'POST', '/market/quotes', {
        token: dealer,
        body: { ticks: [{ symbol: 'EURUSD', bid, ask: bid + 0.0002 }] },
      })
      await Bun.sleep(100)
    }
    const until = Date.now() + 5000
    while (bids().length < 3 && Date.now() < until) {
      const next = await Promise.race([reader.read(), Bun.sleep(until - Date.now()).then(() => null)])
      if (next?.value) seen += dec.decode(next.value)
    }
    abort.abort()
    // the group's spread settings may move the price a little: each posted tick arrives, in order
    const live = bids().slice(1)
    expect(live).toHaveLength(2)
    expect(live[1]!).toBeGreaterThan(live[0]!)
    for (const path of ['/bundle.js', '/bundle.css']) {
      const r = await fetch(`${worker.url}${path}`, { headers: { host: 'affiliates.localhost' } })
      expect([path, r.status, r.headers.get('cache-control')]).toEqual([path, 200, 'public, max-age=300'])
    }
  }, 60_000)

  test('one JSON line per request with its code, and x-request-id on every answer', async () => {
    const ok = await fetch(`${worker.url}/account/me`, { headers: { authorization: `Bearer ${user}` } })
    const refused = await fetch(`${worker.url}/account/me`)
    const missing = await fetch(`${worker.url}/no/such/route`)
    const ids = [ok, refused, missing].map((r) => r.headers.get('x-request-id'))
    expect(ids.every((id) => typeof id === 'string' && id.length > 8)).toBe(true)
    expect(new Set(ids).size).toBe(3)
    const lineOf = async (id: string) => {
      let line: Record<string, unknown> | undefined
      await waitFor(
        async () => {
          line = worker
            .output()
            .split('\n')
            .filter((l) => l.includes(id) && l.includes('{'))
            .map((l) => JSON.parse(l.slice(l.indexOf('{'))))[0]
          return !!line
        },
        5000,
        `the line of ${id}`,
      )
      return line as Record<string, unknown>
    }
    expect(await lineOf(ids[0]!)).toMatchObject({ method: 'GET', route: '/account/me', status: 200 })
    expect(await lineOf(ids[1]!)).toMatchObject({ status: 401, code: 'UNAUTHORIZED' })
    expect(await lineOf(ids[2]!)).toMatchObject({ status: 404, code: 'NOT_FOUND' })
  }, 30_000)

  test('Swagger UI works at the edge: the page and its bundled assets (nothing from a CDN)', async () => {
    const page = await fetch(`${worker.url}/swagger`)
    expect(page.status).toBe(200)
    const html = await page.text()
    expect(html).toContain('/swagger/assets/swagger-ui-bundle.js')
    for (const [file, type, size] of [
      ['swagger-ui-bundle.js', 'text/javascript', 1_000_000],
      ['swagger-ui.css', 'text/css', 10_000],
      ['favicon-32x32.png', 'image/png', 100],
    ] as const) {
      const r = await fetch(`${worker.url}/swagger/assets/${file}`)
      expect(r.status).toBe(200)
      expect(r.headers.get('content-type')).toStartWith(type)
      expect((await r.arrayBuffer()).byteLength).toBeGreaterThan(size)
    }
  }, 30_000)

  test('landing pages, tracking links and the affiliate cabinet at the edge', async () => {
    const ua = { 'user-agent': 'Mozilla/5.0 Chrome/131' }
    const page = await fetch(`${worker.url}/?affiliate=DEMOPARTNER&utm_source=edge`, { headers: ua })
    const html = await page.text()
    expect([page.status, html.slice(0, 120)]).toEqual([200, expect.stringContaining('<')])
    expect(html).toContain('<html')
    const vid = /tcs_vid=([^;]+)/.exec(page.headers.get('set-cookie') ?? '')?.[1]
    // a UUID v7 there too (no Bun.randomUUIDv7 in workerd: the uuid package makes it)
    expect(vid).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    const click = await fetch(`${worker.url}/go/demo-spring`, { headers: ua, redirect: 'manual' })
    expect(click.status).toBe(302)
    expect(click.headers.get('location')).toBe('/p/promo')
    // the edge writes each touch in its request: it is in the database when the answer comes
    const touch = await sql('select affiliate_id from attribution_touches where visitor_id = ?', [vid!])
    expect(Number(touch[0]?.[0])).toBeGreaterThan(0)
    const cabinet = await fetch(`${worker.url}/bundle.js`, { headers: { host: 'affiliates.localhost' } })
    expect(cabinet.status).toBe(200)
    expect((await cabinet.text()).length).toBeGreaterThan(10_000)
    for (const path of ['/', '/login']) {
      const shell = await fetch(`${worker.url}${path}`, { headers: { host: 'affiliates.localhost' } })
      expect(shell.status).toBe(200)
      expect(await shell.text()).toContain('/bundle.js')
    }
  })

  test('the Worker serves the same OpenAPI document as the Bun server', async () => {
    const edge = await (await fetch(`${worker.url}/swagger/json`)).json()
    const bun = await (await fetch(`${engine.url}/swagger/json`)).json()
    expect(Object.keys(edge.paths).length).toBeGreaterThan(90)
    // the places where they differ, as JSON pointers (empty when they are one document)
    const differences: string[] = []
    const walk = (x: unknown, y: unknown, at: string) => {
      if (differences.length >= 20) return
      if (x && y && typeof x === 'object' && typeof y === 'object') {
        for (const k of new Set([...Object.keys(x), ...Object.keys(y)]))
          walk((x as Record<string, unknown>)[k], (y as Record<string, unknown>)[k], `${at}/${k}`)
      } else if (JSON.stringify(x) !== JSON.stringify(y))
        differences.push(`${at}: ${JSON.stringify(x)} vs ${JSON.stringify(y)}`)
    }
    walk(edge, bun, '')
    expect(differences).toEqual([])
  }, 30_000)

  test('scheduled() runs the due jobs', async () => {
    const r = await fetch(`${worker.url}/__scheduled?cron=*+*+*+*+*`)
    expect(r.status).toBe(200)
    await waitFor(async () => /scheduled jobs/.test(worker.output()), 10_000, 'scheduled jobs line')
    expect(worker.output()).toMatch(/"events\.[a-z-]+":\{"ran":true/)
  }, 30_000)

  // a hostile probe: a stall longer than a request left the Worker's cache down for the isolate's life
  // (the probe was cut off with the request that started it, its breaker held half open); Bun healed
  test('Redis stalled for 6 s: the Worker heals once it answers again', async () => {
    const me = () => call(worker.url, 'GET', '/account/me', { token: user })
    expect((await me()).status).toBe(200)
    const redis = new RedisClient(shape.redis.url)
    try {
      await redis.send('CLIENT', ['PAUSE', '6000', 'ALL'])
    } finally {
      redis.close()
    }
    const stalled = Date.now()
    // requests during the stall: the cache's calls time out, its circuit opens, each starts a probe
    while (Date.now() - stalled < 5500) {
      await me()
      await Bun.sleep(400)
    }
    // the cache's circuit closed again (a request answered from elsewhere would not say so), and the
    // account is served (the bus, on the same Redis, heals on its own probe)
    await waitFor(
      async () =>
        (await me()).status === 200 && (await call(worker.url, 'GET', '/health')).json.cache === 'ok',
      20_000,
      'the Worker seeing its cache again',
    )
  }, 60_000)

  test('a quote stream cut off while it reloads the reference data leaves no load behind for later requests', async () => {
    // workerd ends a request's promises with it: a load the isolate kept as a promise, begun by a stream
    // whose client had left, failed every later request that read symbols ("This promise was created by
    // a request that has since ended"), for the isolate's life
    const symbol = () => call(worker.url, 'GET', '/market/symbol?login=100001&symbol=EURUSD', { token: user })
    expect((await symbol()).status).toBe(200)
    const dealer = await dealerToken()
    const abort = new AbortController()
    const stream = await eurusdStream(abort)
    const opened = Date.now()
    expect(stream.status).toBe(200)
    await stream.body!.getReader().read()
    // the client leaves; the Worker learns it at the stream's next write
    abort.abort()
    // past a second, the stream's next tick looks for a new version of the reference data
    await Bun.sleep(1_200)
    const redis = new RedisClient(shape.redis.url)
    try {
      await redis.incr('ref:v1:version')
      await call(engine.url, 'POST', '/market/quotes', {
        token: dealer,
        body: { ticks: [{ symbol: 'EURUSD', bid: 1.1021, ask: 1.1023 }] },
      })
      // the tick's reload waits on a database that stands still until the stream's keep-alive (15 s)
      // finds the client gone and the Worker ends the stream's request, the reload with it
      await pauseProcess(sqld.pid)
      try {
        await Bun.sleep(opened + 16_500 - Date.now())
      } finally {
        process.kill(sqld.pid, 'SIGCONT')
      }
    } finally {
      redis.close()
    }
    await Bun.sleep(1_100)
    const after = await symbol()
    if (after.status !== 200) console.log(after.text, worker.output().slice(-3000))
    expect(after.status).toBe(200)
  }, 60_000)

  test('requests whose clients left while their queries waited leave the database to the requests after them', async () => {
    // the libSQL web client ran 20 queries at once and queued the rest; a request that ended with its
    // query in flight never gave its place back (workerd drops what follows in an ended request), so 20
    // clients gone mid-query left every later query of the isolate waiting for ever
    const list = (signal?: AbortSignal) =>
      fetch(`${worker.url}/notify/list?login=100001`, {
        headers: { authorization: `Bearer ${user}` },
        signal,
      })
    expect((await list()).status).toBe(200)
    const abort = new AbortController()
    await pauseProcess(sqld.pid)
    try {
      const gone = Array.from({ length: 24 }, () => list(abort.signal).catch(() => null))
      // their queries wait on a database that stands still
      await Bun.sleep(1_500)
      abort.abort()
      await Promise.all(gone)
      await Bun.sleep(1_000)
    } finally {
      process.kill(sqld.pid, 'SIGCONT')
    }
    const after = await Promise.race([list(), Bun.sleep(15_000).then(() => null)])
    if (after?.status !== 200) console.log(after?.status, worker.output().slice(-3000))
    expect(after?.status).toBe(200)
  }, 60_000)

  test('the engine gone quiet: the Worker fills nothing at the shared quotes it left, and heals when it is back', async () => {
    const open = () =>
      call(worker.url, 'POST', '/trade/open', {
        token: user,
        body: { login: 100001, cmd: 0, volume: 1, symbol: 'EURUSD', sl: 0, tp: 0 },
      })
    expect((await open()).status).toBe(200)
    // the engine stops (its process frozen): the shared quotes stay as it wrote them, a quiet market's too
    await pauseProcess(engine.pid)
    let stale: Awaited<ReturnType<typeof open>>
    try {
      await Bun.sleep(6_500)
      stale = await open()
    } finally {
      process.kill(engine.pid, 'SIGCONT')
    }
    expect([stale.status, stale.json.error]).toEqual([503, 'PRICE_STALE'])
    expect(stale.json.message).toContain('the engine has written no shared quotes')
    await waitFor(async () => (await open()).status === 200, 15_000, 'the Worker fills again')
    // an isolate that read no price for a while judges no old reading of the engine's word: its next
    // change that checks staleness before any price (a group close) goes through
    await Bun.sleep(6_000)
    const group = await call(worker.url, 'DELETE', '/trade/close/group', {
      token: user,
      body: { login: 100001, type: 0, symbol: 'EURUSD' },
    })
    expect([group.status, group.json.data]).toEqual([200, 'OK'])
  }, 60_000)

  // an edge probe: the Worker reads no bus, so it aged a quote by the feed's own time: a feed whose clock
  // lags refused every fill there (Bun filled), one whose clock leads filled at a frozen price (Bun refused)
  test("a quote's age at the edge is the engine's, not the feed clock's: a lagging feed fills, a stopped one does not", async () => {
    const admin = (
      await call(engine.url, 'POST', '/manager/sign/in', { body: { login: 2, password: 'admin-pass-1' } })
    ).json.__token as string
    const dealer = await dealerToken()
    const limit = (max_quote_age: number) =>
      call(engine.url, 'PATCH', '/manager/symbols/USDCHF', { token: admin, body: { max_quote_age } })
    const tick = async (bid: number, skewSeconds: number) => {
      const time = Math.floor(Date.now() / 1000) + skewSeconds
      const r = await call(engine.url, 'POST', '/market/quotes', {
        token: dealer,
        body: { ticks: [{ symbol: 'USDCHF', bid, ask: bid + 0.0002, time }] },
      })
      expect(r.json.accepted).toBe(1)
    }
    const open = () =>
      call(worker.url, 'POST', '/trade/open', {
        token: user,
        body: { login: 100001, cmd: 0, volume: 1, symbol: 'USDCHF', sl: 0, tp: 0 },
      })
    expect((await limit(4)).status).toBe(200)
    try {
      // the Worker takes the new limit with the reference data (within a second or two)
      await Bun.sleep(2_500)
      // 30 s behind, ticking: fresh by the engine's clock
      await tick(0.88, -30)
      await waitFor(async () => (await open()).status === 200, 5_000, 'a lagging feed fills at the edge')
      // 50 s ahead, then silent: after the limit, no fill at that price
      await tick(0.8801, 50)
      await Bun.sleep(4_800)
      const stale = await open()
      expect([stale.status, stale.json.error]).toEqual([503, 'PRICE_STALE'])
      expect(stale.json.message).toContain('USDCHF')
    } finally {
      await limit(0)
    }
  }, 60_000)

  test("a moving price alert made at the edge starts from the symbol's price now", async () => {
    const dealer = await dealerToken()
    const alertAt = async (bid: number) => {
      const q = await call(engine.url, 'POST', '/market/quotes', {
        token: dealer,
        body: { ticks: [{ symbol: 'EURUSD', bid, ask: bid + 0.0002 }] },
      })
      expect(q.status).toBe(200)
      // the engine writes the shared quote; an isolate's own copy of it is good for 250 ms
      await Bun.sleep(500)
      const r = await call(worker.url, 'POST', '/price_alert', {
        token: user,
        body: { login: 100001, symbol: 'EURUSD', side: 0, condition: 7, move_threshold: 1 },
      })
      expect(r.status).toBe(200)
      return r.json.alert.reference_price as number
    }
    expect(await alertAt(1.1234)).toBe(1.1234)
    expect(await alertAt(1.1301)).toBe(1.1301)
  }, 60_000)

  test("a staff change at the edge is in the audit trail with its outcome (written after the answer, within the request's life)", async () => {
    const manager = (
      await call(worker.url, 'POST', '/manager/sign/in', { body: { login: 1, password: 'manager-pass-1' } })
    ).json.__token
    const dep = await call(worker.url, 'POST', '/manager/accounts/100001/balance', {
      token: manager,
      body: { type: 'deposit', amount: 7, comment: 'edge audit' },
    })
    expect(dep.status).toBe(200)
    const id = dep.headers.get('x-request-id')!
    const row = () => sql('select status, body from staff_actions where request_id = ?', [id])
    await waitFor(async () => (await row())[0]?.[0] === 200, 5_000, 'the outcome of the staff action')
    expect(JSON.parse((await row())[0]![1] as string)).toEqual({
      type: 'deposit',
      amount: 7,
      comment: 'edge audit',
    })
  }, 60_000)

  // an edge probe: a group close wrote each position in its own transaction, all at once; sqld refused about
  // half, counted as skipped positions (200 {closed: 158} of 300), and the request made 1,556 subrequests
  test('DELETE /trade/close/group of 300 positions at the edge closes every one, within the 1,000 subrequests of a Worker invocation', async () => {
    const POSITIONS = 300
    // (run alone with -t, the first test did not sign in)
    user ??= (
      await call(worker.url, 'POST', '/sign/in', { body: { login: 100001, password: 'demo-pass-1' } })
    ).json.__token
    const dealer = await dealerToken()
    const tick = () =>
      call(engine.url, 'POST', '/market/quotes', {
        token: dealer,
        body: { ticks: [{ symbol: 'EURUSD', bid: 1.1, ask: 1.1002 }] },
      })
    expect((await tick()).status).toBe(200)
    // opened on the engine (quicker); the close is the Worker's
    for (let i = 0; i < POSITIONS; i += 25) {
      const rs = await Promise.all(
        Array.from({ length: Math.min(25, POSITIONS - i) }, () =>
          call(engine.url, 'POST', '/trade/open', {
            token: user,
            body: { login: 100001, cmd: 0, volume: 1, symbol: 'EURUSD', sl: 0, tp: 0 },
          }),
        ),
      )
      expect(rs.map((r) => r.status)).toEqual(rs.map(() => 200))
    }
    const eurusd = async () =>
      (
        (await call(worker.url, 'GET', '/trade/list?login=100001', { token: user })).json.positions as {
          symbol: string
        }[]
      ).filter((p) => p.symbol === 'EURUSD')
    const before = await eurusd()
    expect(before.length).toBeGreaterThanOrEqual(POSITIONS)
    expect((await tick()).status).toBe(200)
    await Bun.sleep(500)
    dbCalls.reset()
    kvCalls.reset()
    const r = await call(worker.url, 'DELETE', '/trade/close/group', {
      token: user,
      body: { login: 100001, type: 0, symbol: 'EURUSD' },
    })
    // what the request's work after its answer spends (waitUntil) counts too
    await Bun.sleep(500)
    const spent = { sqld: dbCalls.hits, upstash: kvCalls.hits }
    console.log(
      `group close of ${before.length}: ${r.status} ${r.text.slice(0, 80)}; subrequests ${JSON.stringify(spent)}`,
    )
    expect([r.status, r.json?.closed, (await eurusd()).length]).toEqual([200, before.length, 0])
    expect(spent.sqld + spent.upstash).toBeLessThanOrEqual(1_000)
  }, 120_000)

  // an edge probe (copytrade): a subscription opened a copy of every master position inside the request,
  // about 16 subrequests each (1,298 for 80 positions): a 500 partway, links left 'opening'. At the edge a
  // resync opens 40 in the request; the rest stay pending for copytrade.reconcile (here the engine's)
  test('POST /copytrade/subscription at the edge on a master holding 80 positions stays within the 1,000 subrequests of one Worker invocation, and every copy opens', async () => {
    const MASTER_POSITIONS = 80
    const dealer = await dealerToken()
    const master = (
      await call(engine.url, 'POST', '/sign/in', { body: { login: 100004, password: 'master-pass-1' } })
    ).json.__token
    const follower = (
      await call(worker.url, 'POST', '/sign/in', { body: { login: 100001, password: 'demo-pass-1' } })
    ).json.__token
    const customer = (
      await call(worker.url, 'POST', '/customer/sign/in', {
        body: { email: 'demo@example.com', password: 'demo-pass-1' },
      })
    ).json.__token
    const tick = () =>
      call(engine.url, 'POST', '/market/quotes', {
        token: dealer,
        body: { ticks: [{ symbol: 'EURUSD', bid: 1.1, ask: 1.1002 }] },
      })
    expect((await tick()).status).toBe(200)
    // the demo master (id 1, login 100004) holds MASTER_POSITIONS positions, opened on the engine (quicker)
    for (let i = 0; i < MASTER_POSITIONS; i += 20) {
      const rs = await Promise.all(
        Array.from({ length: Math.min(20, MASTER_POSITIONS - i) }, () =>
          call(engine.url, 'POST', '/trade/open', {
            token: master,
            body: { login: 100004, cmd: 0, volume: 1, symbol: 'EURUSD', sl: 0, tp: 0 },
          }),
        ),
      )
      expect(rs.map((r) => r.status)).toEqual(rs.map(() => 200))
    }
    const eurusd = async () =>
      (
        (await call(worker.url, 'GET', '/trade/list?login=100001', { token: follower })).json.positions as {
          symbol: string
        }[]
      ).filter((p) => p.symbol === 'EURUSD').length
    const before = await eurusd()
    // the customer's account 100001 follows with no cap on copies (max_positions 0: none)
    const f = await call(worker.url, 'POST', '/copytrade/follower', {
      token: customer,
      body: { login: 100001, defaults: { volume_mode: 1, volume_param: 1, max_positions: 0 } },
    })
    expect(f.status).toBe(200)
    const version = (await call(worker.url, 'GET', '/copytrade/masters/1', { token: customer })).json
      .policy_version
    expect((await tick()).status).toBe(200)
    await Bun.sleep(500)
    dbCalls.reset()
    kvCalls.reset()
    const s = await call(worker.url, 'POST', '/copytrade/subscription', {
      token: customer,
      body: { follower_login: 100001, master_id: 1, policy_version: version, max_positions: 0 },
    })
    // what the request's work after its answer spends (waitUntil) counts too
    await Bun.sleep(500)
    const spent = { sqld: dbCalls.hits, upstash: kvCalls.hits }
    console.log(
      `subscription to ${MASTER_POSITIONS} positions: ${s.status}; subrequests ${JSON.stringify(spent)}`,
    )
    expect(s.status).toBe(200)
    try {
      // every copy opens: in the request or after it (copytrade.reconcile)
      let copies = 0
      const until = Date.now() + 30_000
      while (Date.now() < until) {
        copies = (await eurusd()) - before
        if (copies >= MASTER_POSITIONS) break
        await tick()
        await Bun.sleep(1_000)
      }
      expect(copies).toBe(MASTER_POSITIONS)
      expect(spent.sqld + spent.upstash).toBeLessThanOrEqual(1_000)
    } finally {
      // the follower is left unbound (manual_trading_mode) for what runs after (on the engine)
      await call(engine.url, 'POST', `/copytrade/subscription/${s.json.id}/disable`, {
        token: (
          await call(engine.url, 'POST', '/customer/sign/in', {
            body: { email: 'demo@example.com', password: 'demo-pass-1' },
          })
        ).json.__token,
        body: {},
      })
    }
  }, 180_000)

  test('a Worker missing its settings answers 503 naming them (never a bare 500, never their values)', async () => {
    const bare = await startWranglerDev({ APP_ENV: 'production', DATABASE_URL: sqld.url })
    try {
      const r = await fetch(`${bare.url}/health`)
      const body = (await r.json()) as { error: string; message: string }
      expect([r.status, body.error]).toEqual([503, 'SERVICE_UNAVAILABLE'])
      expect(body.message).toContain('JWT_SECRET')
      expect(body.message).toContain('UPSTASH_REDIS_REST_URL')
      expect(body.message).not.toContain(sqld.url)
    } finally {
      await bare.stop()
    }
  }, 120_000)
})
