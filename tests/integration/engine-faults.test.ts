// The engine's trigger path under a database stall, on the scale-out shape (tests/support/scale-shape.ts):
// sqld stalls (SIGSTOP) right as a tick reaches an SL. The tick was accepted (200): the SL it reached is
// executed once the database answers again, at the tick's price, even if the price has gone back (an
// execution the database did not take is written again: trading/engine/trigger-engine.ts, retryLater).
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { type Client, createClient } from '@libsql/client'
import { waitFor } from '../support/ports'
import { type ScaleShape, startScaleShape } from '../support/scale-shape'

const SYMBOL = 'BTCUSD'
const LOGIN = 100001
const PRICE = { bid: 43_000, ask: 43_030 }
const SL = 42_000
const BELOW = { bid: 41_000, ask: 41_030 }
const FEED_TOKEN = 'feed-9f3Kq2LmXz7Rt4VbN8cW1yHs6Ju0Pa5D'

let shape: ScaleShape
let db: Client
let user: string

async function req(
  base: string,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: unknown,
) {
  const started = performance.now()
  try {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: { ...headers, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
      signal: AbortSignal.timeout(20_000),
    })
    const text = await res.text()
    let json: any
    try {
      json = JSON.parse(text)
    } catch {}
    return { status: res.status, json, text, ms: Math.round(performance.now() - started) }
  } catch {
    return { status: 0, json: undefined as any, text: '', ms: Math.round(performance.now() - started) }
  }
}
const feed = (base: string, q: { bid: number; ask: number }) =>
  req(base, 'POST', '/feed/quotes', { 'x-feed-token': FEED_TOKEN }, { ticks: [{ symbol: SYMBOL, ...q }] })

beforeAll(async () => {
  shape = await startScaleShape({ transport: 'ws', env: { FEED_TOKEN } })
  db = createClient({ url: shape.sqld.url, intMode: 'number' })
  const s = await req(shape.api[1]!.url, 'POST', '/sign/in', {}, { login: LOGIN, password: 'demo-pass-1' })
  user = s.json.__token
  expect((await feed(shape.api[0]!.url, PRICE)).status).toBe(200)
}, 120_000)

afterAll(async () => {
  try {
    process.kill(shape.sqld.pid, 'SIGCONT')
  } catch {}
  db?.close()
  await shape?.stop()
})

test('a tick accepted (200) just before sqld stalls: the SL it reached is executed once sqld answers, though the price went back', async () => {
  const [a, b] = shape.api
  const r = await req(
    a!.url,
    'POST',
    '/trade/open',
    { authorization: user },
    {
      login: LOGIN,
      cmd: 0,
      volume: 1,
      symbol: SYMBOL,
      sl: SL,
      tp: 0,
      comment: 'stall-sl',
    },
  )
  expect(r.status).toBe(200)
  const ticket = r.json.order as number
  await Bun.sleep(500)
  // the tick is accepted, and the database stalls as the engine writes what it reached
  const breachAt = Date.now()
  const breach = await feed(b!.url, BELOW)
  process.kill(shape.sqld.pid, 'SIGSTOP')
  console.log(
    `[probe] breach tick during the stall: ${breach.status} in ${breach.ms} ms ${breach.text.slice(0, 120)}`,
  )
  await Bun.sleep(Math.max(0, 10_000 - breach.ms))
  const resumedAt = Date.now()
  process.kill(shape.sqld.pid, 'SIGCONT')
  // the feed goes on at the old price once the database answers
  await waitFor(async () => (await feed(b!.url, PRICE)).status === 200, 10_000, 'feed again')
  let row: any
  const until = Date.now() + 10_000
  while (Date.now() < until) {
    row = (
      await db.execute({
        sql: 'select state, close_reason, close_price, close_time from orders where ticket = ?',
        args: [ticket],
      })
    ).rows[0]
    if (row?.state === 'closed') break
    await Bun.sleep(250)
  }
  console.log('[probe] order after the stall:', JSON.stringify(row))
  const lines = shape.servers
    .flatMap((s) =>
      s
        .output()
        .split('\n')
        .filter((l) => /failed/.test(l)),
    )
    .slice(0, 6)
  console.log(lines.join('\n'))
  // at the price of the tick that reached it (a buy closes at the bid), not the one after the stall
  if (breach.status === 200)
    expect({ state: row?.state, reason: row?.close_reason, price: row?.close_price }).toEqual({
      state: 'closed',
      reason: 'sl',
      price: BELOW.bid,
    })
  else expect(breach.status).toBe(503)
  // and at its time: the deal is the tick's, not the time the database took it (seconds later)
  if (breach.status === 200) {
    expect(Number(row?.close_time)).toBeGreaterThanOrEqual(breachAt - 1000)
    expect(Number(row?.close_time)).toBeLessThan(resumedAt)
  }
}, 90_000)
