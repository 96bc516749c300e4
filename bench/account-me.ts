// GET /account/me (authenticated, account read, live margin) vs raw Bun.serve, measured in one run.
// Servers are pinned to core 0 and wrk to core 1. Goal from issue 2: ratio >= 0.25.
import { startPinned, wrk } from './lib'

const seconds = Number(process.env.BENCH_SECONDS ?? 10)
const connections = Number(process.env.BENCH_CONNECTIONS ?? 50)

const raw = await startPinned('bench/raw-server.ts', 0)
await wrk(`http://127.0.0.1:${raw.port}/`, { core: 1, seconds: 2, connections }) // warm-up
const base = await wrk(`http://127.0.0.1:${raw.port}/`, { core: 1, seconds, connections })
await raw.stop()

const app = await startPinned('scripts/serve-temp.ts', 0, { LOG_LEVEL: process.env.LOG_LEVEL ?? 'info' })
const signIn = await fetch(`http://127.0.0.1:${app.port}/sign/in`, {
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ login: 100001, password: 'demo-pass-1' }),
})
const token = ((await signIn.json()) as { __token: string }).__token
const url = `http://127.0.0.1:${app.port}/account/me`
const check = await fetch(url, { headers: { authorization: token } })
if (check.status !== 200) throw new Error(`GET /account/me answered ${check.status}`)
await wrk(url, { core: 1, seconds: 2, connections, headers: { authorization: token } })
const me = await wrk(url, { core: 1, seconds, connections, headers: { authorization: token } })
await app.stop()

if (me.non2xx > 0) throw new Error(`${me.non2xx} non-2xx answers during the run`)
const ratio = me.rps / base.rps
console.log(`raw Bun.serve            ${base.rps.toFixed(0).padStart(8)} req/s   p99 ${base.p99}`)
console.log(`GET /account/me          ${me.rps.toFixed(0).padStart(8)} req/s   p99 ${me.p99}`)
console.log(
  `ratio                    ${ratio.toFixed(3)}   (goal >= 0.25; ${connections} connections, ${seconds}s, log level ${process.env.LOG_LEVEL ?? 'info'})`,
)
