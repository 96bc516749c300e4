// Signed deposit webhooks on the embedded default (issue 19): distinct events processed per second
// (verified, stored in the inbox, credited), and the time from sending a webhook to the credited balance
// visible in GET /account/me, p50/p99; raw Bun.serve measured by the same client in the same run.
// The servers run on core 0 (taskset), this client on core 1 (`npm run bench:cashier`).
import { sandboxEvent, signSandbox } from '../src/modules/cashier/providers/sandbox'
import { startPinned } from './lib'

const EVENTS = Number(process.env.BENCH_EVENTS ?? 2000)
const LATENCY_SAMPLES = Number(process.env.BENCH_SAMPLES ?? 300)
const CONCURRENCY = 20
const SECRET = 'sandbox-demo-secret-dev-only'

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!
}

async function post(url: string, body: string, headers: Record<string, string>) {
  const r = await fetch(url, {
    method: 'POST',
    body,
    headers: { 'content-type': 'application/json', ...headers },
  })
  const text = await r.text()
  return { status: r.status, text }
}

/** Runs `n` jobs with `CONCURRENCY` in flight; returns jobs per second. */
async function pool(n: number, job: (i: number) => Promise<void>) {
  let next = 0
  const t0 = performance.now()
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < n) await job(next++)
    }),
  )
  return n / ((performance.now() - t0) / 1000)
}

const app = await startPinned('scripts/serve-temp.ts', 0, {
  LOG_LEVEL: 'warn',
  SEED_HISTORY: '0',
  QUOTE_SIMULATOR: '0',
})
const base = `http://127.0.0.1:${app.port}`
try {
  const json = async (path: string, body: unknown, token?: string, method = 'POST') => {
    const r = await fetch(`${base}${path}`, {
      method,
      headers: { 'content-type': 'application/json', ...(token ? { authorization: token } : {}) },
      body: JSON.stringify(body),
    })
    return (await r.json()) as any
  }
  const customer = (await json('/customer/sign/in', { email: 'demo@example.com', password: 'demo-pass-1' }))
    .__token as string
  const manager = (await json('/manager/sign/in', { login: 1, password: 'manager-pass-1' })).__token as string
  const settings = await (
    await fetch(`${base}/manager/kyc/settings`, { headers: { authorization: manager } })
  ).json()
  settings.tiers.deposit_limit_unverified = { USD: 1e9 }
  await json('/manager/kyc/settings', settings, manager, 'PUT')

  const deposits: number[] = []
  await pool(EVENTS + LATENCY_SAMPLES, async () => {
    const d = await json('/cashier/deposit', { login: 100001, method: 'card', amount: 10 }, customer)
    deposits.push(d.transaction.id)
  })
  const event = (id: number) => {
    const body = sandboxEvent(`evt-bench-${id}`, 'payment.succeeded', {
      token: `tok${id}`,
      reference: String(id),
      amount: 1000,
      currency: 'USD',
    })
    return {
      body,
      headers: { 'sandbox-signature': signSandbox(SECRET, body, Math.floor(Date.now() / 1000)) },
    }
  }

  // throughput: distinct events, 20 in flight
  let credited = 0
  const perSecond = await pool(EVENTS, async (i) => {
    const e = event(deposits[i]!)
    const r = await post(`${base}/cashier/webhook/sandbox`, e.body, e.headers)
    if (r.status === 200 && r.text.includes('"duplicate":false')) credited++
  })
  const search = await (
    await fetch(`${base}/manager/cashier/transactions?status=credited&limit=200`, {
      headers: { authorization: manager },
    })
  ).json()

  // latency: one webhook at a time, then GET /account/me until the balance shows it
  const balance = async () =>
    (
      (await (
        await fetch(`${base}/account/me?login=100001`, { headers: { authorization: customer } })
      ).json()) as any
    ).balance as number
  const visible: number[] = []
  for (const id of deposits.slice(EVENTS)) {
    const before = await balance()
    const e = event(id)
    const t0 = performance.now()
    await post(`${base}/cashier/webhook/sandbox`, e.body, e.headers)
    while ((await balance()) < before + 10) {}
    visible.push(performance.now() - t0)
  }

  // raw Bun.serve, same client, same body size, same concurrency and the same one-at-a-time loop
  const raw = await startPinned('bench/raw-server.ts', 0)
  const rawUrl = `http://127.0.0.1:${raw.port}/`
  const sample = event(deposits[0]!)
  const rawPerSecond = await pool(EVENTS, async () => {
    await post(rawUrl, sample.body, sample.headers)
  })
  const rawLatency: number[] = []
  for (let i = 0; i < LATENCY_SAMPLES; i++) {
    const t0 = performance.now()
    await post(rawUrl, sample.body, sample.headers)
    await fetch(rawUrl).then((r) => r.text())
    rawLatency.push(performance.now() - t0)
  }
  await raw.stop()

  const f = (x: number) => x.toFixed(2)
  console.log(`signed webhooks, ${EVENTS} distinct events, ${CONCURRENCY} in flight (libSQL file, embedded)`)
  console.log(`  credited: ${credited}/${EVENTS} (staff search sees ${search.rows.length}+ credited)`)
  console.log(`  webhooks credited per second: ${perSecond.toFixed(0)}`)
  console.log(
    `  raw Bun.serve, same client: ${rawPerSecond.toFixed(0)} req/s (ratio ${(perSecond / rawPerSecond).toFixed(3)})`,
  )
  console.log(`webhook -> credited balance visible in /account/me, ${LATENCY_SAMPLES} samples, one at a time`)
  console.log(
    `  p50 ${f(pct(visible, 50))} ms, p99 ${f(pct(visible, 99))} ms, max ${f(Math.max(...visible))} ms`,
  )
  console.log(
    `  raw Bun.serve (one POST + one GET): p50 ${f(pct(rawLatency, 50))} ms, p99 ${f(pct(rawLatency, 99))} ms`,
  )
  if (credited !== EVENTS) process.exitCode = 1
} finally {
  await app.stop()
}
