// POST /trade/open and GET /market/watch/list (cache hit) as ratios to raw Bun.serve, measured in one run.
// Servers on core 0, wrk on core 1. Each route's ratio is to a raw Bun.serve window measured right before
// it (the host's speed drifts over a minute), and every line shows the CPU time the host stole meanwhile.
// Goals (issue 3): watch list >= 0.3, trade open >= 0.05, trade open p99 < 20 ms at 50 connections.
// BENCH_GC=1 also prints the pauses of the young garbage collections in each window. BENCH_STAFF=1 sends the
// opens with a dealer's session (audited) instead of the accounts' own.
// The server runs as in production (no simulator; quotes posted once by the dealer). Orders are BTCUSD
// (trades 24/7) market buys of 0.01 lot, spread over 100 demo accounts opened for the run (so no single
// account grows thousands of positions), each sent with the account's own session (a staff session's
// orders are written to the audit trail first: a dealer's desk, not the hot path).
import { rmSync } from 'node:fs'
import { dirname } from 'node:path'
import { accountTokens, openScript, startPinned, stealMeter, wrk } from './lib'

const seconds = Number(process.env.BENCH_SECONDS ?? 10)
const connections = Number(process.env.BENCH_CONNECTIONS ?? 50)
const ACCOUNTS = 100

const raw = await startPinned('bench/raw-server.ts', 0)
const rawUrl = `http://127.0.0.1:${raw.port}/`
await wrk(rawUrl, { core: 1, seconds: 2, connections })
type Run = Awaited<ReturnType<typeof wrk>> & { steal: number }
async function measure(target: string, opts: { headers?: Record<string, string>; script?: string } = {}) {
  const steal = stealMeter()
  const r = await wrk(target, { ...opts, core: 1, seconds, connections })
  return { ...r, steal: steal() } as Run
}

// Production shape: no simulator in the serving process; prices arrive through the ingest route.
const app = await startPinned('scripts/serve-temp.ts', 0, {
  LOG_LEVEL: process.env.LOG_LEVEL ?? 'info',
  QUOTE_SIMULATOR: 'false',
})
const url = (p: string) => `http://127.0.0.1:${app.port}${p}`
async function post(path: string, body: unknown, token?: string) {
  const r = await fetch(url(path), {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: token } : {}) },
    body: JSON.stringify(body),
  })
  if (r.status !== 200) throw new Error(`${path} answered ${r.status}: ${await r.text()}`)
  return r.json() as Promise<Record<string, unknown>>
}
const manager = (await post('/manager/sign/in', { login: 1, password: 'manager-pass-1' })).__token as string
const dealer = (await post('/manager/sign/in', { login: 3, password: 'dealer-pass-1' })).__token as string
const user = (await post('/sign/in', { login: 100001, password: 'demo-pass-1' })).__token as string
await post(
  '/market/quotes',
  {
    ticks: [
      { symbol: 'BTCUSD', bid: 65000, ask: 65020 },
      { symbol: 'EURUSD', bid: 1.1, ask: 1.1001 },
      { symbol: 'GBPUSD', bid: 1.27, ask: 1.2702 },
      { symbol: 'XAUUSD', bid: 2400, ask: 2400.4 },
      { symbol: 'US500', bid: 5600, ask: 5600.5 },
    ],
  },
  dealer,
)
const logins: number[] = []
for (let i = 0; i < ACCOUNTS; i++)
  logins.push(
    (await post('/manager/accounts', { group: 'demo\\USD', password: 'bench-pass-1' }, manager))
      .login as number,
  )
for (const s of ['EURUSD', 'GBPUSD', 'XAUUSD', 'BTCUSD', 'US500'])
  await post('/market/watch', { login: 100001, symbol: s }, user)

// watch list, cache hit
const watchUrl = url('/market/watch/list?login=100001&prefix=')
await wrk(watchUrl, { core: 1, seconds: 2, connections, headers: { authorization: user } })
const watchBase = await measure(rawUrl)
const watchGc = app.gcMark()
const watch = await measure(watchUrl, { headers: { authorization: user } })
const watchPauses = app.gcSince(watchGc)

// trade open: wrk rotates the login of the body, each sent with its own session
// BENCH_STAFF=1: every open sent with the dealer's session instead (a desk's orders: each written to the
// staff audit trail first)
const script = openScript(
  logins,
  process.env.BENCH_STAFF === '1'
    ? logins.map(() => dealer)
    : await accountTokens(url(''), logins, 'bench-pass-1'),
)
// Warm-up: JIT tiers and caches settle before the measured window. The open path is longer than the
// watch list's: after 2 s Bun's JIT worker still took 0.7 s of the pinned core in the next 10 s, after
// 5 s 0.15-0.25 s (per-thread CPU from /proc), so trade open warms up for 5 s.
await wrk(url('/trade/open'), { core: 1, seconds: 5, connections, script })
const openBase = await measure(rawUrl)
const openGc = app.gcMark()
const open = await measure(url('/trade/open'), { script })
const openPauses = app.gcSince(openGc)
const stats = await (
  await fetch(url(`/trade/list?login=${logins[0]}`), { headers: { authorization: dealer } })
).json()
await app.stop()
await raw.stop()
rmSync(dirname(script), { recursive: true, force: true })

if (watch.non2xx > 0) throw new Error(`${watch.non2xx} non-2xx answers from the watch list`)
const line = (name: string, r: Run, base: Run) =>
  console.log(
    `${name.padEnd(28)}${r.rps.toFixed(0).padStart(8)} req/s   p50 ${r.p50}  p90 ${r.p90}  p99 ${r.p99}   ratio ${(r.rps / base.rps).toFixed(3)}   steal ${r.steal.toFixed(1)}%`,
  )
line('raw Bun.serve', watchBase, watchBase)
line('GET /market/watch/list', watch, watchBase)
line('raw Bun.serve', openBase, openBase)
line('POST /trade/open', open, openBase)
console.log(
  `trade open: ${open.non2xx} non-2xx of ${Math.round(open.rps * seconds)}; ${(stats as { positions: unknown[] }).positions.length} positions on the first account`,
)
// BENCH_GC=1: the young collections' pauses in each window (each one holds every request in flight)
for (const [name, p] of [
  ['watch list', watchPauses],
  ['trade open', openPauses],
] as const)
  if (p)
    console.log(
      `GC during ${name}: ${p.count} young collections, pause p50 ${p.p50.toFixed(2)} ms, p90 ${p.p90.toFixed(2)} ms, max ${p.max.toFixed(2)} ms, ${p.total.toFixed(0)} ms in all`,
    )
console.log(
  `goals: watch list >= 0.3 (${(watch.rps / watchBase.rps).toFixed(3)}), trade open >= 0.05 (${(open.rps / openBase.rps).toFixed(3)}), trade open p99 < 20ms (${open.p99}); ${connections} connections, ${seconds}s`,
)
