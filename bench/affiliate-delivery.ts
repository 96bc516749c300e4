// Affiliate RevShare delivery cost (ADR 0024, amendment on rounding), in process on the embedded libSQL file:
// the ledger's part of delivering one RevShare trade fact (the fact inserted, its row derived, the period's
// rounding row kept, one write transaction) for an affiliate with 6,400 and with 100,000 RevShare rows in
// the month. Before: the ledger of `BENCH_BEFORE_REF` (3fa44e4, read with `git show`), which summed the
// group's rows on every delivery; after: this tree's, which moves the group's running totals. Each runs on
// its own copy of one seeded database, the two interleaved in rounds.
import { execFileSync } from 'node:child_process'
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { createClient, type InStatement } from '@libsql/client'
import { drizzle } from 'drizzle-orm/libsql'
import { migrate } from 'drizzle-orm/libsql/migrator'
import { openDatabase } from '../src/kernel/db/client'
import { MIGRATIONS_DIR } from '../src/kernel/db/migrate'
import type { Fact } from '../src/modules/affiliate/domain/conversions'
import { share } from '../src/modules/affiliate/domain/plans'
import { conversionFacts } from '../src/modules/affiliate/schema'
import * as after from '../src/modules/affiliate/service/commission-ledger'

const SIZES = [6_400, Number(process.env.BENCH_ROWS ?? 100_000)]
const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 200)
const ROUNDS = 4
const BEFORE_REF = process.env.BENCH_BEFORE_REF ?? '3fa44e4'
const ROOT = resolve(import.meta.dir, '..')
const PERIOD = '2026-10'
const MONTH = Date.UTC(2026, 9, 1)
const NOW = Date.UTC(2026, 9, 28)
const DAY = 86_400_000
const ROWS_PER_CUSTOMER = 10
const BP = 2_500

const dir = mkdtempSync(join(tmpdir(), 'tcs-affdelivery-'))
process.on('exit', () => rmSync(dir, { recursive: true, force: true }))

/** The ledger as it was at `ref`, its relative imports pointed at this tree (the same schema and domain). */
async function ledgerAt(ref: string): Promise<typeof after | null> {
  let text: string
  try {
    text = execFileSync('git', ['show', `${ref}:src/modules/affiliate/service/commission-ledger.ts`], {
      cwd: ROOT,
      encoding: 'utf8',
    })
  } catch {
    return null
  }
  const service = join(ROOT, 'src/modules/affiliate/service')
  text = text
    .replaceAll("from '../", `from '${join(ROOT, 'src/modules/affiliate')}/`)
    .replaceAll("from './", `from '${service}/`)
  const file = join(dir, `ledger-${ref}.ts`)
  writeFileSync(file, text)
  return (await import(file)) as typeof after
}

// one database: affiliate a's month holds SIZES[a] RevShare rows, its totals and its rounding row
const seedUrl = `file:${join(dir, 'seed.db')}`
const seed = createClient({ url: seedUrl })
await migrate(drizzle(seed), { migrationsFolder: MIGRATIONS_DIR })
const setup: InStatement[] = [
  "insert into affiliate_plans (id, brand_id, name, created_at) values (1, 1, 'bench revshare', 0)",
  {
    sql: 'insert into affiliate_plan_versions (plan_id, version, effective_from, terms, created_at) values (1, 1, 0, ?, 0)',
    args: [
      JSON.stringify({
        type: 'revshare',
        revshare_bp: BP,
        revshare_basis: 'trading_revenue',
        hold_days: 0,
        sub_affiliate_bp: 0,
      }),
    ],
  },
]
for (const [a] of SIZES.entries())
  setup.push(
    `insert into affiliate_plan_assignments (brand_id, affiliate_id, effective_from, plan_id, created_at) values (1, ${a + 1}, 0, 1, 0)`,
  )
await seed.batch(setup, 'write')
const firstCustomer = (a: number) => 1_000_000 * (a + 1)
for (const [a, size] of SIZES.entries()) {
  const rows: unknown[][] = []
  for (let i = 0; i < size; i++) {
    const customer = firstCustomer(a) + Math.floor(i / ROWS_PER_CUSTOMER)
    const basis = 1 + ((i * 7919) % 997)
    rows.push([
      1,
      a + 1,
      customer,
      'revshare',
      `c${customer}:rev:trade:${i}`,
      PERIOD,
      share(basis, BP),
      'USD',
      basis,
      BP,
      10,
      1,
      1,
      MONTH + ((i * 104_729) % (25 * DAY)),
    ])
  }
  const cols =
    'brand_id, affiliate_id, customer_id, kind, key, period, amount_minor, currency, basis_minor, rate_bp, volume, plan_id, plan_version, event_time'
  const one = `(${cols
    .split(',')
    .map(() => '?')
    .join(',')}, 0, 0)`
  for (let i = 0; i < rows.length; i += 2_000) {
    const part = rows.slice(i, i + 2_000)
    await seed.execute({
      sql: `insert into affiliate_commissions (${cols}, created_at, updated_at) values ${part.map(() => one).join(',')}`,
      args: part.flat() as never,
    })
  }
}
// the totals and the rounding row, as migration 0039 and the deliveries leave them
await seed.execute(`insert into affiliate_revshare_totals (brand_id, affiliate_id, period, plan_id, plan_version,
    currency, basis_minor, paid_minor, rate_bp, "rows", event_time)
  select brand_id, affiliate_id, period, plan_id, plan_version, currency, sum(basis_minor), sum(amount_minor),
    max(rate_bp), count(*), max(event_time)
  from affiliate_commissions group by brand_id, affiliate_id, period, plan_id, plan_version, currency`)
await seed.execute(`insert into affiliate_commissions (brand_id, affiliate_id, customer_id, kind, key, period,
    amount_minor, currency, basis_minor, rate_bp, plan_id, plan_version, event_time, created_at, updated_at)
  select brand_id, affiliate_id, 0, 'revshare', 'round:' || period || ':1.1:USD', period,
    (basis_minor * ${BP}) / 10000 - paid_minor, currency, 0, rate_bp, 1, 1, event_time, 0, 0
  from affiliate_revshare_totals`)
await seed.execute('analyze')
await seed.execute('pragma wal_checkpoint(truncate)')
seed.close()

const ledgers: [string, typeof after][] = []
const before = await ledgerAt(BEFORE_REF)
if (before) ledgers.push([`before (${BEFORE_REF})`, before])
else console.log(`(no ${BEFORE_REF} to compare: not a git checkout?)`)
ledgers.push(['after (this tree)', after])

const dbs = ledgers.map(([name], i) => {
  const file = join(dir, `run-${i}.db`)
  copyFileSync(join(dir, 'seed.db'), file)
  return { name, file }
})
const opened = await Promise.all(dbs.map((d) => openDatabase(`file:${d.file}`)))
const ctx = { clock: { now: () => NOW } } as never
let eventId = 1

/** One RevShare delivery of a new trade of one of affiliate a's customers: the fact and its rows. */
async function deliver(ledger: typeof after, db: (typeof opened)[number]['db'], a: number, n: number) {
  const customerId = firstCustomer(a) + ((n * 7) % (SIZES[a]! / ROWS_PER_CUSTOMER))
  const fact: Fact = {
    kind: 'trade',
    reference: `${900_000_000 + eventId}`,
    valueMinor: 1 + (n % 97),
    currency: 'USD',
    volume: 10,
    eventId: eventId++,
    eventTime: MONTH + (n % 25) * DAY + 3_600_000,
  }
  const t0 = performance.now()
  await db.transaction(async (tx) => {
    await tx.insert(conversionFacts).values({ brandId: 1, customerId, ...fact })
    await ledger.reconcileFact(
      ctx,
      tx,
      { brandId: 1, customerId, affiliateId: a + 1, linkId: null, tracking: {} },
      fact,
    )
  })
  return performance.now() - t0
}

const pct = (xs: number[], p: number) =>
  [...xs].sort((x, y) => x - y)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!
const times = new Map<string, number[]>()
for (let w = 0; w < 20; w++)
  for (const [i, [, ledger]] of ledgers.entries())
    for (const a of SIZES.keys()) await deliver(ledger, opened[i]!.db, a, w)
for (let round = 0; round < ROUNDS; round++)
  for (const [i, [name, ledger]] of ledgers.entries())
    for (const a of SIZES.keys()) {
      const list = times.get(`${name}|${a}`) ?? []
      for (let s = 0; s < SAMPLES / ROUNDS; s++)
        list.push(await deliver(ledger, opened[i]!.db, a, round * 1_000 + s))
      times.set(`${name}|${a}`, list)
    }
for (const o of opened) o.close()

console.log(
  `one RevShare delivery (trade fact inserted, its row, the period's rounding row), ${SAMPLES} each:`,
)
const p50 = new Map<string, number>()
for (const [a, size] of SIZES.entries())
  for (const [name] of ledgers) {
    const xs = times.get(`${name}|${a}`)!
    p50.set(`${name}|${a}`, pct(xs, 50))
    console.log(
      `  ${size.toLocaleString().padStart(7)} rows in the month, ${name.padEnd(18)} p50 ${pct(xs, 50).toFixed(2)} ms   p99 ${pct(xs, 99).toFixed(2)} ms   mean ${(xs.reduce((s, x) => s + x, 0) / xs.length).toFixed(2)} ms`,
    )
  }
if (ledgers.length === 2) {
  const [b, f] = ledgers.map(([name]) => name)
  const big = SIZES.length - 1
  console.log(
    `before / after at ${SIZES[big]!.toLocaleString()} rows: ${(p50.get(`${b}|${big}`)! / p50.get(`${f}|${big}`)!).toFixed(1)}x (p50); after at ${SIZES[big]!.toLocaleString()} / at ${SIZES[0]!.toLocaleString()} rows: ${(p50.get(`${f}|${big}`)! / p50.get(`${f}|0`)!).toFixed(2)}`,
  )
}
