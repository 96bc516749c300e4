// Redis down long enough that the engine gives up its role, then back empty (no bus, no cursor): a tick
// accepted before an engine has taken the role again still reaches the SLs (kernel/engine/role.ts).
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { type Client, createClient } from '@libsql/client'
import { type RedisServer, startRedis } from '../support/redis'
import { type ScaleShape, startScaleShape } from '../support/scale-shape'
import { signIn } from '../support/server'

const SYMBOL = 'BTCUSD'
const LOGIN = 100001
const PRICE = { bid: 43_000, ask: 43_030 }
const SL = 42_000
const BELOW = { bid: 41_000, ask: 41_030 }

let shape: ScaleShape
let redis: RedisServer | undefined
let db: Client
let dealer: string
let user: string

async function req(base: string, method: string, path: string, token?: string, body?: unknown) {
  const started = performance.now()
  try {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: {
        ...(token ? { authorization: token } : {}),
        ...(body ? { 'content-type': 'application/json' } : {}),
      },
      body: body ? JSON.stringify(body) : undefined,
      signal: AbortSignal.timeout(15_000),
    })
    const text = await res.text()
    let json: any
    try {
      json = JSON.parse(text)
    } catch {}
    return { status: res.status, json, ms: performance.now() - started }
  } catch {
    return { status: 0, json: undefined as any, ms: performance.now() - started }
  }
}
const ingest = (base: string, q: { bid: number; ask: number }) =>
  req(base, 'POST', '/market/quotes', dealer, { ticks: [{ symbol: SYMBOL, ...q }] })

beforeAll(async () => {
  shape = await startScaleShape({ transport: 'ws' })
  db = createClient({ url: shape.sqld.url, intMode: 'number' })
  dealer = await signIn(shape.api[0]!.url, '/manager/sign/in', { login: 3, password: 'dealer-pass-1' })
  user = await signIn(shape.api[1]!.url, '/sign/in', { login: LOGIN, password: 'demo-pass-1' })
  expect((await ingest(shape.api[0]!.url, PRICE)).status).toBe(200)
}, 120_000)

afterAll(async () => {
  db?.close()
  await redis?.stop()
  await shape?.stop()
})

test('Redis back after 6 s: a tick accepted (200) before the engine retakes its role still fires the SL it reached', async () => {
  const [a, b] = shape.api
  const r = await req(a!.url, 'POST', '/trade/open', user, {
    login: LOGIN,
    cmd: 0,
    volume: 1,
    symbol: SYMBOL,
    sl: SL,
    tp: 0,
    comment: 'gap-sl',
  })
  expect(r.status).toBe(200)
  const ticket = r.json.order as number
  await Bun.sleep(500)
  const port = shape.redis.port
  await shape.redis.stop()
  await Bun.sleep(6000)
  redis = await startRedis(port)
  // the feed resumes at once: the first tick accepted is below the SL, the next ones back above it
  let breach = await ingest(b!.url, BELOW)
  while (breach.status !== 200) {
    await Bun.sleep(20)
    breach = await ingest(b!.url, BELOW)
  }
  const backAt = Date.now()
  let back = await ingest(a!.url, PRICE)
  while (back.status !== 200) back = await ingest(a!.url, PRICE)
  const holders = await Promise.all(
    [shape.engine, shape.standby].map((s) => req(s.url, 'GET', '/health/ready')),
  )
  console.log(
    `[probe] breach accepted; engine holders right after: ${holders.map((h) => h.json?.checks?.engine?.this_instance).join(',')}`,
  )
  for (let i = 0; i < 10; i++) {
    await Bun.sleep(300)
    await ingest(a!.url, PRICE)
  }
  let row: any
  const until = Date.now() + 8000
  while (Date.now() < until) {
    row = (
      await db.execute({
        sql: 'select state, close_reason, close_price from orders where ticket = ?',
        args: [ticket],
      })
    ).rows[0]
    if (row?.state === 'closed') break
    await Bun.sleep(250)
  }
  console.log(`[probe] order ${Date.now() - backAt} ms later:`, JSON.stringify(row))
  expect({ state: row?.state, reason: row?.close_reason, price: row?.close_price }).toEqual({
    state: 'closed',
    reason: 'sl',
    price: BELOW.bid,
  })
}, 90_000)
