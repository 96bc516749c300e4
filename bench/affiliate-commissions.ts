// Affiliate commissions (issue 44) on the embedded default, server on core 0, this script on core 1:
// 1,000,000 conversion facts of one brand's month across 100 affiliates (100,000 referred customers, ten
// facts each: registration, KYC, two deposits, six closed trades), with the conversion and commission rows
// the real derivation (domain/commissions.ts) gives them under half hybrid, half tiered plans, and ten
// recruiters. Figures:
// 1. the month's close: 100 affiliates' statements (POST /manager/affiliate-periods/{month}/close), goal < 5 s;
// 2. one affiliate's month by sub-id (GET /manager/affiliate-reports?dimension=sub1), p50 and p99, goal
//    p99 < 100 ms.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createClient, type InStatement } from '@libsql/client'
import { deriveCommissions, type FactRow } from '../src/modules/affiliate/domain/commissions'
import { periodOf } from '../src/modules/affiliate/domain/periods'
import type { AppliedPlan, PlanTerms } from '../src/modules/affiliate/domain/plans'
import { startPinned } from './lib'

const AFFILIATES = Number(process.env.BENCH_AFFILIATES ?? 100)
const CUSTOMERS = Number(process.env.BENCH_CUSTOMERS_PER_AFFILIATE ?? 1_000)
const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 200)
const DAY = 86_400_000
const dir = mkdtempSync(join(tmpdir(), 'tcs-affcomm-'))
const url = `file:${join(dir, 'app.db')}`

const app = await startPinned('scripts/serve-temp.ts', 0, {
  SERVE_DATABASE_URL: url,
  LOG_LEVEL: 'warn',
  QUOTE_SIMULATOR: '0',
  SEED_HISTORY: '0',
  // the bench closes the month itself
  AFFILIATE_PERIOD_AUTO_CLOSE: 'false',
})
const base = `http://127.0.0.1:${app.port}`
// a failed run stops its server too (stop() signals it before its first await)
process.on('exit', () => void app.stop())
const db = createClient({ url, intMode: 'number' })
await db.execute('pragma busy_timeout = 10000')

// the last month that has ended
const now = Date.now()
const monthStart = Date.UTC(new Date(now).getUTCFullYear(), new Date(now).getUTCMonth() - 1, 1)
const month = periodOf(monthStart)
const monthDays = Math.round(
  (Date.UTC(new Date(now).getUTCFullYear(), new Date(now).getUTCMonth(), 1) - monthStart) / DAY,
)

const HYBRID: PlanTerms = {
  type: 'hybrid',
  cpa: { USD: 20_000 },
  qualify: { min_first_deposit: { USD: 10_000 }, kyc_approved: true },
  revshare_bp: 2500,
  revshare_basis: 'trading_revenue',
  markup_per_lot: { USD: 400 },
  hold_days: 30,
  sub_affiliate_bp: 1000,
}
const TIERED: PlanTerms = {
  type: 'tiered_revshare',
  revshare_bp: 2000,
  tier_metric: 'volume_lots',
  tiers: [
    { from: 100_000, bp: 3000 },
    { from: 400_000, bp: 4000 },
  ],
  revshare_basis: 'trading_revenue',
  hold_days: 30,
  sub_affiliate_bp: 500,
}

const started = performance.now()
const firstAffiliate = Number(
  (await db.execute('select coalesce(max(id), 0) + 1 from affiliates')).rows[0][0],
)
const firstPlan = Number(
  (await db.execute('select coalesce(max(id), 0) + 1 from affiliate_plans')).rows[0][0],
)
const plans: AppliedPlan[] = [
  { planId: firstPlan, version: 1, terms: HYBRID },
  { planId: firstPlan + 1, version: 1, terms: TIERED },
]
const setup: InStatement[] = []
for (const p of plans) {
  setup.push({
    sql: 'insert into affiliate_plans (id, brand_id, name, created_at) values (?, 1, ?, 0)',
    args: [p.planId, `bench ${p.terms.type}`],
  })
  setup.push({
    sql: 'insert into affiliate_plan_versions (plan_id, version, effective_from, terms, created_at) values (?, 1, 0, ?, 0)',
    args: [p.planId, JSON.stringify(p.terms)],
  })
}
const planOf = (a: number) => plans[a % 2]
for (let a = 0; a < AFFILIATES; a++) {
  const id = firstAffiliate + a
  // ten recruiters: affiliate a < 10 recruited affiliates a + 10, a + 20
  const parent = a >= 10 && a < 30 ? firstAffiliate + (a % 10) : null
  setup.push({
    sql: "insert into affiliates (id, brand_id, email, code, name, created_at) values (?, 1, ?, ?, 'bench', ?)",
    args: [id, `bench-${a}@example.com`, `BENCHC${a}`, now],
  })
  setup.push({
    sql: "insert into affiliate_access (affiliate_id, brand_id, status, password_hash, recruiter_id, created_at) values (?, 1, 'active', '', ?, ?)",
    args: [id, parent, now],
  })
  setup.push({
    sql: 'insert into affiliate_plan_assignments (brand_id, affiliate_id, effective_from, plan_id, created_at) values (1, ?, 0, ?, 0)',
    args: [id, planOf(a).planId],
  })
}
await db.batch(setup, 'write')

/** Inserts rows in multi-row statements of `chunk` rows. */
async function insert(
  tx: { execute: (s: InStatement) => Promise<unknown> },
  table: string,
  cols: string[],
  rows: unknown[][],
) {
  const chunk = Math.floor(30_000 / cols.length)
  for (let i = 0; i < rows.length; i += chunk) {
    const part = rows.slice(i, i + chunk)
    const one = `(${cols.map(() => '?').join(',')})`
    await tx.execute({
      sql: `insert into ${table} (${cols.join(',')}) values ${part.map(() => one).join(',')}`,
      args: part.flat() as never,
    })
  }
}

let facts = 0
let commissionRows = 0
// after the demo's facts (its own ids and event ids): the server may still be seeding them
for (let last = -1; ; await Bun.sleep(1_000)) {
  const n = Number((await db.execute('select count(*) from affiliate_facts')).rows[0][0])
  if (n === last && n > 0) break
  last = n
}
let factId = Number((await db.execute('select coalesce(max(id), 0) + 1 from affiliate_facts')).rows[0][0])
let eventId = 1_000_000_000
const SUBS = Array.from({ length: 40 }, (_, i) => `sub-${i}`)
const COUNTRIES = ['DE', 'FR', 'ES', 'IT', 'GB', 'PL', 'NL', 'SE', 'PT', 'AT']
for (let a = 0; a < AFFILIATES; a++) {
  const affiliateId = firstAffiliate + a
  const plan = planOf(a)
  const factRows: unknown[][] = []
  const customerRows: unknown[][] = []
  const conversionRows: unknown[][] = []
  const commission: unknown[][] = []
  for (let c = 0; c < CUSTOMERS; c++) {
    const customerId = 10_000_000 + a * CUSTOMERS + c
    const t0 = monthStart + ((c * 7919) % (monthDays - 3)) * DAY + (c % 86_400) * 1000
    const list: FactRow[] = []
    const add = (
      kind: FactRow['kind'],
      at: number,
      reference: string,
      valueMinor: number | null,
      volume = 0,
    ) => {
      const f: FactRow = {
        id: factId++,
        kind,
        reference,
        valueMinor,
        currency: valueMinor === null ? '' : 'USD',
        volume,
        eventId: eventId++,
        eventTime: at,
      }
      list.push(f)
      factRows.push([
        f.id,
        1,
        customerId,
        f.kind,
        f.reference,
        f.valueMinor,
        f.currency,
        f.volume,
        f.eventId,
        f.eventTime,
      ])
    }
    add('registration', t0, String(customerId), null)
    add('kyc', t0 + 3_600_000, String(customerId), null)
    add('deposit', t0 + 7_200_000, `d${customerId}`, 5_000 + (c % 40) * 500)
    add('deposit', t0 + DAY, `e${customerId}`, 20_000)
    for (let k = 0; k < 6; k++)
      add(
        'trade',
        t0 + DAY + (k + 1) * 3_600_000,
        `${customerId * 10 + k}`,
        300 + ((c + k) % 7) * 100,
        10 + ((c * k) % 90),
      )
    customerRows.push([
      customerId,
      1,
      affiliateId,
      null,
      SUBS[c % SUBS.length],
      `p${c % 5}`,
      '',
      '',
      '',
      COUNTRIES[c % 10],
      `/lp/${c % 8}`,
      t0,
    ])
    const [reg, kyc, first, second] = list
    for (const [f, kind, key] of [
      [reg, 'registration', 'registration'],
      [kyc, 'kyc_approval', 'kyc_approval'],
      [first, 'first_deposit', 'first_deposit'],
      [first, 'deposit', `deposit:${first.reference}`],
      [second, 'deposit', `deposit:${second.reference}`],
    ] as const)
      conversionRows.push([
        1,
        affiliateId,
        null,
        customerId,
        kind,
        key,
        f.valueMinor,
        f.currency,
        f.reference,
        f.eventTime,
        f.eventId,
        now,
        now,
      ])
    for (const r of deriveCommissions(customerId, list, () => plan))
      commission.push([
        1,
        affiliateId,
        customerId,
        r.kind,
        r.key,
        periodOf(r.eventTime),
        r.amountMinor,
        r.currency,
        r.basisMinor,
        r.rateBp,
        r.volume,
        r.planId,
        r.planVersion,
        JSON.stringify(r.factIds),
        r.eventTime,
        now,
        now,
      ])
  }
  const tx = await db.transaction('write')
  await insert(
    tx,
    'affiliate_facts',
    [
      'id',
      'brand_id',
      'customer_id',
      'kind',
      'reference',
      'value_minor',
      'currency',
      'volume',
      'event_id',
      'event_time',
    ],
    factRows,
  )
  await insert(
    tx,
    'affiliate_customers',
    [
      'customer_id',
      'brand_id',
      'affiliate_id',
      'link_id',
      'sub1',
      'sub2',
      'sub3',
      'sub4',
      'sub5',
      'country',
      'landing_path',
      'created_at',
    ],
    customerRows,
  )
  await insert(
    tx,
    'affiliate_conversions',
    [
      'brand_id',
      'affiliate_id',
      'link_id',
      'customer_id',
      'kind',
      'key',
      'value_minor',
      'currency',
      'reference_id',
      'event_time',
      'event_id',
      'created_at',
      'updated_at',
    ],
    conversionRows,
  )
  await insert(
    tx,
    'affiliate_commissions',
    [
      'brand_id',
      'affiliate_id',
      'customer_id',
      'kind',
      'key',
      'period',
      'amount_minor',
      'currency',
      'basis_minor',
      'rate_bp',
      'volume',
      'plan_id',
      'plan_version',
      'fact_ids',
      'event_time',
      'created_at',
      'updated_at',
    ],
    commission,
  )
  await tx.commit()
  facts += factRows.length
  commissionRows += commission.length
}
await db.execute('analyze')
console.log(
  `seeded ${facts.toLocaleString()} facts, ${commissionRows.toLocaleString()} commission rows of ${AFFILIATES} affiliates (${month}) in ${((performance.now() - started) / 1000).toFixed(1)} s`,
)

const signIn = await fetch(`${base}/manager/sign/in`, {
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ login: 1, password: 'manager-pass-1' }),
})
const staff = ((await signIn.json()) as { __token: string }).__token
const call = async (method: string, path: string) => {
  const t0 = performance.now()
  const r = await fetch(`${base}${path}`, { method, headers: { authorization: staff } })
  const body = (await r.json()) as Record<string, unknown>
  if (r.status !== 200) throw new Error(`${method} ${path} answered ${r.status}: ${JSON.stringify(body)}`)
  return { ms: performance.now() - t0, body }
}

const close = await call('POST', `/manager/affiliate-periods/${month}/close`)
const statementCount = close.body.statements as number
// (and the demo partner's)
if (statementCount < AFFILIATES) throw new Error(`${statementCount} statements for ${AFFILIATES} affiliates`)

const pct = (xs: number[], p: number) =>
  [...xs].sort((x, y) => x - y)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]
const lastDay = new Date(Date.UTC(new Date(now).getUTCFullYear(), new Date(now).getUTCMonth(), 1) - DAY)
  .toISOString()
  .slice(0, 10)
const reportPath = (a: number) =>
  `/manager/affiliate-reports?affiliate_id=${firstAffiliate + a}&dimension=sub1&from=${month}-01&to=${lastDay}`
const check = await call('GET', reportPath(0))
const groups = (check.body.rows as unknown[]).length
for (let i = 0; i < 20; i++) await call('GET', reportPath(i % AFFILIATES))
const times: number[] = []
for (let i = 0; i < SAMPLES; i++) times.push((await call('GET', reportPath((i * 37) % AFFILIATES))).ms)
await app.stop()
db.close()
rmSync(dir, { recursive: true, force: true })

console.log(
  `close ${month}: ${statementCount} statements over ${facts.toLocaleString()} facts, ${close.body.rows_added} tier and override rows   ${(close.ms / 1000).toFixed(2)} s   (goal: < 5 s)`,
)
console.log(
  `one affiliate's month by sub1 (${groups} groups, ${CUSTOMERS * 10} facts), ${SAMPLES} requests   p50 ${pct(times, 50).toFixed(1)} ms   p99 ${pct(times, 99).toFixed(1)} ms   (goal: p99 < 100 ms)`,
)
