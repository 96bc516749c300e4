// Scale-out (issue 18), in one run on a real sqld and redis-server with two API instances (ROLE=api) and
// the engine (ROLE=engine), each its own process, on Hrana over WebSockets (BENCH_TRANSPORT=http: HTTP):
//  1. trigger latency: a tick ingested on API B -> the SL executed by the engine (close_time of the order,
//     the engine's clock, minus the moment the ingest request was sent), over TRIGGERS positions opened
//     through API A; p50/p99 (goal: p99 under 100 ms on loopback; issue 43: under 30 ms);
//  2. trade-open throughput of API A alone, then of A and B together on the same sqld (ratio printed).
import { createClient } from '@libsql/client'
import { startRedis } from '../tests/support/redis'
import { call, serverDir, startRealServer } from '../tests/support/server'
import { startSqld } from '../tests/support/sqld'
import { accountTokens, openScript, wrk } from './lib'

const TRIGGERS = Number(process.env.BENCH_TRIGGERS ?? 1000)
const seconds = Number(process.env.BENCH_SECONDS ?? 8)
const connections = Number(process.env.BENCH_CONNECTIONS ?? 50)
const ACCOUNTS = 40
// Hrana over WebSockets, as docs/operations.md recommends for Bun instances (ADR 0019) and the other
// benches on sqld run; BENCH_TRANSPORT=http for the HTTP transport
const transport = process.env.BENCH_TRANSPORT === 'http' ? 'http' : 'ws'

const [sqld, redis] = await Promise.all([startSqld(), startRedis()])
const home = serverDir()
const env = (role: string) => ({
  DATABASE_URL: transport === 'ws' ? sqld.url.replace(/^http/, 'ws') : sqld.url,
  REDIS_URL: redis.url,
  ROLE: role,
  LOG_LEVEL: 'warn',
  SIGNIN_MAX_FAILURES_PER_IP: '100000',
})
// every process this run started is stopped by its id, whatever fails
const started: { stop(): Promise<void> }[] = []
try {
  const engine = await startRealServer(home.dir, env('engine'))
  started.push(engine)
  await engine.waitForOutput(/engine role taken/)
  const a = await startRealServer(home.dir, env('api'))
  started.push(a)
  const b = await startRealServer(home.dir, env('api'))
  started.push(b)
  const ok = async (r: Promise<{ status: number; json: any; text: string }>) => {
    const x = await r
    if (x.status !== 200) throw new Error(`${x.status} ${x.text}`)
    return x.json
  }
  const dealer = (
    await ok(call(a.url, 'POST', '/manager/sign/in', { body: { login: 3, password: 'dealer-pass-1' } }))
  ).__token as string
  const manager = (
    await ok(call(a.url, 'POST', '/manager/sign/in', { body: { login: 1, password: 'manager-pass-1' } }))
  ).__token as string
  const user = (
    await ok(call(a.url, 'POST', '/sign/in', { body: { login: 100002, password: 'demo-pass-1' } }))
  ).__token as string
  const tick = (base: string, bid: number, ask: number) =>
    ok(
      call(base, 'POST', '/market/quotes', {
        token: dealer,
        body: { ticks: [{ symbol: 'EURUSD', bid, ask }] },
      }),
    )
  await ok(
    call(a.url, 'POST', '/market/quotes', {
      token: dealer,
      body: { ticks: [{ symbol: 'BTCUSD', bid: 65000, ask: 65020 }] },
    }),
  )

  // 1. trigger latency
  const sent = new Map<number, number>()
  for (let i = 0; i < TRIGGERS; i++) {
    await tick(a.url, 1.1, 1.1001)
    const o = await ok(
      call(a.url, 'POST', '/trade/open', {
        token: user,
        body: { login: 100002, cmd: 0, volume: 1, symbol: 'EURUSD', sl: 1.0995, tp: 0 },
      }),
    )
    const t0 = Date.now()
    await tick(b.url, 1.0994, 1.0995)
    sent.set(o.order as number, t0)
  }
  const db = createClient({ url: sqld.url, intMode: 'number' })
  let rows: { ticket: number; close_time: number; close_reason: string }[] = []
  for (let wait = 0; wait < 100; wait++) {
    rows = (
      await db.execute({
        sql: `select ticket, close_time, close_reason from orders where login = 100002 and state = 'closed'`,
        args: [],
      })
    ).rows as unknown as typeof rows
    if (rows.length >= sent.size) break
    await Bun.sleep(100)
  }
  const lat = rows
    .filter((r) => sent.has(r.ticket) && r.close_reason === 'sl')
    .map((r) => r.close_time - sent.get(r.ticket)!)
    .sort((x, y) => x - y)
  const q = (p: number) => lat[Math.min(lat.length - 1, Math.floor((p / 100) * lat.length))]

  // 2. trade opens: one API instance, then two on the same sqld
  const logins: number[] = []
  for (let i = 0; i < ACCOUNTS; i++)
    logins.push(
      (
        await ok(
          call(a.url, 'POST', '/manager/accounts', {
            token: manager,
            body: { group: 'demo\\USD', password: 'bench-pass-1' },
          }),
        )
      ).login as number,
    )
  const script = openScript(logins, await accountTokens(a.url, logins, 'bench-pass-1'))
  const opts = { core: 1, seconds, connections, script }
  await wrk(`${a.url}/trade/open`, { ...opts, seconds: 3 })
  const one = await wrk(`${a.url}/trade/open`, opts)
  const half = Math.max(1, Math.floor(connections / 2))
  const [twoA, twoB] = await Promise.all([
    wrk(`${a.url}/trade/open`, { ...opts, connections: half, core: 0 }),
    wrk(`${b.url}/trade/open`, { ...opts, connections: half, core: 1 }),
  ])

  console.log(
    `trigger latency (tick on API B -> SL executed by the engine, Hrana over ${transport}), ${lat.length} of ${sent.size} triggers:`,
  )
  console.log(
    `  p50 ${q(50)} ms  p90 ${q(90)} ms  p99 ${q(99)} ms  max ${lat.at(-1)} ms  (goals: p99 < 100 ms; issue 43: < 30 ms)`,
  )
  console.log(`trade open, ${connections} connections, ${seconds} s, one sqld:`)
  console.log(`  one API instance:  ${one.rps.toFixed(0)} req/s  p99 ${one.p99}  non-2xx ${one.non2xx}`)
  const two = twoA.rps + twoB.rps
  console.log(
    `  two API instances: ${two.toFixed(0)} req/s (${twoA.rps.toFixed(0)} + ${twoB.rps.toFixed(0)})  p99 ${twoA.p99} / ${twoB.p99}  non-2xx ${twoA.non2xx + twoB.non2xx}`,
  )
  console.log(
    `  ratio two / one: ${(two / one.rps).toFixed(2)}  (${navigator.hardwareConcurrency} cores for everything)`,
  )

  // what the non-2xx answers were, when the instances logged them (unhandled errors are logged at error)
  const failures = new Map<string, number>()
  for (const line of [a, b].flatMap((x) => x.output().split('\n')))
    if (line.includes('"unhandled error"')) {
      const err = (/"err":"([^"]*)"/.exec(line)?.[1] ?? line).slice(0, 160)
      failures.set(err, (failures.get(err) ?? 0) + 1)
    }
  for (const [err, n] of failures) console.log(`  logged ${n}x: ${err}`)

  db.close()
} finally {
  await Promise.all(started.map((x) => x.stop()))
  await Promise.all([sqld.stop(), redis.stop()])
  home.remove()
}
