// Marketing attribution (issue 30), measured in one run with the server on core 0 and wrk on core 1:
// 1. touches recorded through the landing page (GET / with attribution values, a new visitor each time:
//    a touch written and a cookie set per request) against raw Bun.serve (goal: ratio >= 0.25);
// 2. registration with attribution (a visitor cookie with touches, values in the body) against
//    registration without (goal: ratio >= 0.9).
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startPinned, stealMeter, wrk } from './lib'

const seconds = Number(process.env.BENCH_SECONDS ?? 10)
const connections = Number(process.env.BENCH_CONNECTIONS ?? 50)
const BROWSER =
  'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36'
const steal = stealMeter()

const raw = await startPinned('bench/raw-server.ts', 0)
await wrk(`http://127.0.0.1:${raw.port}/`, { core: 1, seconds: 2, connections })
const base = await wrk(`http://127.0.0.1:${raw.port}/`, { core: 1, seconds, connections })
await raw.stop()

const app = await startPinned('scripts/serve-temp.ts', 0, {
  LOG_LEVEL: process.env.LOG_LEVEL ?? 'info',
  QUOTE_SIMULATOR: '0',
  SEED_HISTORY: '0',
  REGISTER_MAX_PER_HOUR: '1000000',
})
const host = `http://127.0.0.1:${app.port}`
const landing = `${host}/?affiliate=DEMOPARTNER&utm_source=bench&utm_campaign=landing&sub1=s1`
const first = await fetch(landing, { headers: { 'user-agent': BROWSER } })
if (first.status !== 200 || !first.headers.get('set-cookie'))
  throw new Error(`landing answered ${first.status}`)
await wrk(landing, { core: 1, seconds: 2, connections, headers: { 'user-agent': BROWSER } })
const touches = await wrk(landing, { core: 1, seconds, connections, headers: { 'user-agent': BROWSER } })

// registration: a wrk script makes a new email per request; "with" also sends a visitor cookie whose
// touches the registration weighs, and attribution values in the body
const visitor = /tcs_vid=([^;]+)/.exec(first.headers.get('set-cookie')!)![1]
for (let i = 0; i < 5; i++)
  await fetch(`${host}/?link=demo-spring&sub2=${i}`, {
    headers: { 'user-agent': BROWSER, cookie: `tcs_vid=${visitor}` },
  })
const script = (name: string, extra: string, cookie: boolean) => {
  const file = join(mkdtempSync(join(tmpdir(), 'tcs-bench-')), `${name}.lua`)
  writeFileSync(
    file,
    `local n = 0
wrk.method = "POST"
wrk.headers["content-type"] = "application/json"
wrk.headers["user-agent"] = "${BROWSER}"
${cookie ? `wrk.headers["cookie"] = "tcs_vid=${visitor}"` : ''}
request = function()
  n = n + 1
  return wrk.format(nil, "/customer/register", nil, '{"email":"${name}-' .. math.random(1, 1e9) .. '-' .. n .. '@bench.example","password":"bench-pass-1","name":"Bench"${extra}}')
end
`,
  )
  return file
}
const regConnections = 8
const plain = script('plain', '', false)
const attributed = script('attr', ',"attribution":{"utm_source":"lp","sub3":"x"}', true)
await wrk(`${host}/customer/register`, { core: 1, seconds: 2, connections: regConnections, script: plain })
const without = await wrk(`${host}/customer/register`, {
  core: 1,
  seconds,
  connections: regConnections,
  script: plain,
})
const withAttr = await wrk(`${host}/customer/register`, {
  core: 1,
  seconds,
  connections: regConnections,
  script: attributed,
})
await app.stop()

for (const r of [touches, without, withAttr])
  if (r.non2xx > 0) throw new Error(`${r.non2xx} non-2xx answers during a run`)
const ratio = touches.rps / base.rps
const regRatio = withAttr.rps / without.rps
console.log(`raw Bun.serve                    ${base.rps.toFixed(0).padStart(8)} req/s   p99 ${base.p99}`)
console.log(
  `GET / with values (a touch each) ${touches.rps.toFixed(0).padStart(8)} req/s   p99 ${touches.p99}`,
)
console.log(
  `ratio                            ${ratio.toFixed(3)}   (goal >= 0.25; ${connections} connections, ${seconds}s)`,
)
console.log(
  `register, no attribution         ${without.rps.toFixed(1).padStart(8)} req/s   p99 ${without.p99}`,
)
console.log(
  `register, cookie touches + body  ${withAttr.rps.toFixed(1).padStart(8)} req/s   p99 ${withAttr.p99}`,
)
console.log(
  `ratio                            ${regRatio.toFixed(3)}   (goal >= 0.9; ${regConnections} connections: argon2id per registration)`,
)
console.log(`host steal                       ${steal().toFixed(1)} %`)
