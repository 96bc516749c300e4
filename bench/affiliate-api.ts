// The affiliate integration API (issue 32) on the embedded default: 1,000,000 transactions of one brand
// across 100 affiliates (10,000 each), a page of 1,500 rows: p50 and p99 of the first page, and every
// page down to the last by cursor (goal: p99 under 50 ms, the last page as fast as the first: no OFFSET).
// The server runs on core 0; this script (the client and the seeding) on core 1.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createClient } from '@libsql/client'
import { startPinned } from './lib'

const AFFILIATES = Number(process.env.BENCH_AFFILIATES ?? 100)
const PER = Number(process.env.BENCH_ROWS_PER_AFFILIATE ?? 10_000)
const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 200)
const dir = mkdtempSync(join(tmpdir(), 'tcs-affapi-'))
const url = `file:${join(dir, 'app.db')}`

const app = await startPinned('scripts/serve-temp.ts', 0, {
  SERVE_DATABASE_URL: url,
  LOG_LEVEL: 'warn',
  QUOTE_SIMULATOR: '0',
  SEED_HISTORY: '0',
})
const base = `http://127.0.0.1:${app.port}`
const db = createClient({ url, intMode: 'number' })
await db.execute('pragma busy_timeout = 10000')

// 100 affiliates of the Demo brand with access, and their deposits: 1,000,000 rows written directly
const started = performance.now()
const now = Date.now()
const firstId = Number((await db.execute('select coalesce(max(id), 0) + 1 from affiliates')).rows[0][0])
await db.batch(
  Array.from({ length: AFFILIATES }, (_, a) => ({
    sql: "insert into affiliates (id, brand_id, email, code, name, created_at) values (?, 1, ?, ?, 'bench', ?)",
    args: [firstId + a, `bench-${a}@example.com`, `BENCH${a}`, now],
  })).concat(
    Array.from({ length: AFFILIATES }, (_, a) => ({
      sql: "insert into affiliate_access (affiliate_id, brand_id, status, password_hash, created_at) values (?, 1, 'active', '', ?)",
      args: [firstId + a, now],
    })),
  ),
  'write',
)
const CHUNK = 500
const cols =
  '(brand_id, affiliate_id, link_id, customer_id, kind, key, value_minor, currency, reference_id, event_time, event_id, created_at, updated_at)'
const row = "(1, ?, null, ?, ?, ?, ?, 'USD', ?, ?, ?, ?, ?)"
const text = `insert into affiliate_conversions ${cols} values ${Array.from({ length: CHUNK }, () => row).join(',')}`
let n = 0
for (let a = 0; a < AFFILIATES; a++) {
  const tx = await db.transaction('write')
  for (let i = 0; i < PER; i += CHUNK) {
    const args: (string | number)[] = []
    for (let j = 0; j < CHUNK; j++) {
      const k = n++
      const refund = k % 20 === 0
      args.push(
        firstId + a,
        1_000_000 + (k % 50_000),
        refund ? 'deposit_reversal' : 'deposit',
        `${refund ? 'deposit_reversal' : 'deposit'}:x${k}`,
        refund ? -5_000 : 10_000 + (k % 90_000),
        `x${k}`,
        now - 400 * 86_400_000 + k * 30_000,
        k,
        now,
        now,
      )
    }
    await tx.execute({ sql: text, args })
  }
  await tx.commit()
}
await db.execute('analyze')
console.log(
  `seeded ${n.toLocaleString()} transactions of ${AFFILIATES} affiliates in ${((performance.now() - started) / 1000).toFixed(1)} s`,
)

const signIn = await fetch(`${base}/manager/sign/in`, {
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ login: 1, password: 'manager-pass-1' }),
})
const staff = ((await signIn.json()) as { __token: string }).__token
const target = firstId + Math.floor(AFFILIATES / 2)
const issued = await fetch(`${base}/manager/affiliates/${target}/tokens`, {
  method: 'POST',
  headers: { 'content-type': 'application/json', authorization: staff },
  body: JSON.stringify({ scopes: ['transactions:read', 'customers:read'], expires_in_days: 1 }),
})
const token = ((await issued.json()) as { token: string }).token
const page = async (cursor: string | null) => {
  const t0 = performance.now()
  const r = await fetch(
    `${base}/api/affiliate/v1/transactions?page_size=1500${cursor ? `&cursor=${cursor}` : ''}`,
    {
      headers: { host: 'affiliates.localhost', authorization: token },
    },
  )
  const body = (await r.json()) as { rows: unknown[]; next_cursor: string | null }
  if (r.status !== 200 || body.rows.length === 0)
    throw new Error(`page answered ${r.status} with ${body.rows?.length} rows`)
  return { ms: performance.now() - t0, next: body.next_cursor, rows: body.rows.length }
}
const pct = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]

for (let i = 0; i < 20; i++) await page(null) // warm-up
const first: number[] = []
for (let i = 0; i < SAMPLES; i++) first.push((await page(null)).ms)
// every page down to the last, by cursor
const walk: number[] = []
let cursor: string | null = null
let rows = 0
do {
  const p = await page(cursor)
  walk.push(p.ms)
  rows += p.rows
  cursor = p.next
} while (cursor)
const lastPages = walk.slice(-3)
await app.stop()
db.close()
rmSync(dir, { recursive: true, force: true })

console.log(
  `first page (1,500 rows), ${SAMPLES} requests   p50 ${pct(first, 50).toFixed(1)} ms   p99 ${pct(first, 99).toFixed(1)} ms   (goal: p99 < 50 ms)`,
)
console.log(
  `walk by cursor: ${walk.length} pages, ${rows.toLocaleString()} rows   p50 ${pct(walk, 50).toFixed(1)} ms   p99 ${pct(walk, 99).toFixed(1)} ms`,
)
console.log(
  `last three pages ${lastPages.map((m) => m.toFixed(1)).join(', ')} ms   ratio last/first p50 ${(pct(lastPages, 50) / pct(first, 50)).toFixed(2)}`,
)
