// One affiliate's report (issue 44: by sub-id, a month, p99 < 100 ms at 1M facts), called in process on a
// fresh libSQL file: 1,000,000 conversion rows of one brand's month across 100 affiliates (100,000
// referred customers, ten rows each), 300,000 commission rows, no clicks (the attribution module's part
// is an index range of its own). `timeReport` is reusable: any ReportCtx and query, p50 and p99.
//   bun bench/affiliate-reports.ts            (REPORT_CUSTOMERS=100000 by default)
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import { openDatabase } from '../src/kernel/db/client'
import { migrateDatabase } from '../src/kernel/db/migrate'
import { type ReportCtx, type ReportQuery, report } from '../src/modules/affiliate/service/reports'

/** Runs the report `samples` times after a few warm-up runs: p50 and p99 in ms, and the last answer. */
export async function timeReport(
  ctx: ReportCtx,
  q: ReportQuery | ((i: number) => ReportQuery),
  samples = 200,
) {
  const at = (i: number) => (typeof q === 'function' ? q(i) : q)
  for (let i = 0; i < 10; i++) await report(ctx, at(i))
  const times: number[] = []
  let last: Awaited<ReturnType<typeof report>> | null = null
  for (let i = 0; i < samples; i++) {
    const t0 = performance.now()
    last = await report(ctx, at(i))
    times.push(performance.now() - t0)
  }
  times.sort((a, b) => a - b)
  const pct = (p: number) => times[Math.min(times.length - 1, Math.floor((p / 100) * times.length))]
  return { p50: pct(50), p99: pct(99), last: last! }
}

if (import.meta.main) {
  const CUSTOMERS = Number(process.env.REPORT_CUSTOMERS ?? 100_000)
  const AFFILIATES = 100
  const dir = mkdtempSync(join(tmpdir(), 'tcs-bench-reports-'))
  const database = await openDatabase(`file:${join(dir, 'bench.db')}`)
  try {
    const db = database.db
    await migrateDatabase(db)
    const month = Date.UTC(2026, 9, 1)
    const span = 31 * 86_400_000
    const t0 = performance.now()
    // customers c = 1..N of affiliate (c % 100) + 1, fifty sub1 values, four countries, two links
    await db.run(sql`with recursive n(c) as (select 1 union all select c + 1 from n where c < ${CUSTOMERS})
      insert into affiliate_customers (customer_id, brand_id, affiliate_id, link_id, sub1, country, landing_path, created_at)
      select c, 1, c % ${AFFILIATES} + 1, c / ${AFFILIATES} % 2 + 1, 's' || (c / ${AFFILIATES} % 50), substr('DEGBFRNL', (c / ${AFFILIATES} % 4) * 2 + 1, 2), '/p/promo', ${month} from n`)
    // ten rows a customer: registration, KYC, first deposit, six deposits, active trader
    await db.run(sql`with recursive k(i, kind) as (values (0, 'registration'), (1, 'kyc_approval'), (2, 'first_deposit'),
        (3, 'deposit'), (4, 'deposit'), (5, 'deposit'), (6, 'deposit'), (7, 'deposit'), (8, 'deposit'), (9, 'active_trader'))
      insert into affiliate_conversions (brand_id, affiliate_id, link_id, customer_id, kind, key, value_minor, currency,
        reference_id, event_time, event_id, created_at, updated_at)
      select 1, r.affiliate_id, r.link_id, r.customer_id, k.kind, k.kind || ':' || k.i,
        case when k.kind in ('deposit', 'first_deposit') then 10000 + k.i else null end, 'USD', '',
        ${month} + (r.customer_id * 7919 + k.i * 104729) % ${span}, r.customer_id * 10 + k.i, ${month}, ${month}
      from affiliate_customers r, k`)
    await db.run(sql`with recursive k(i, kind) as (values (0, 'cpa'), (1, 'revshare'), (2, 'revshare'))
      insert into affiliate_commissions (brand_id, affiliate_id, customer_id, kind, key, period, amount_minor, currency,
        event_time, created_at, updated_at)
      select 1, r.affiliate_id, r.customer_id, k.kind, 'c' || r.customer_id || ':' || k.i, '2026-10', 2500 + k.i,
        case when k.i = 2 then 'EUR' else 'USD' end, ${month} + (r.customer_id * 31 + k.i * 7) % ${span}, ${month}, ${month}
      from affiliate_customers r, k`)
    await db.run(sql`analyze`)
    console.log(
      `seeded ${CUSTOMERS * 10} conversion rows, ${CUSTOMERS * 3} commission rows in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
    )
    const ctx = { db, clicks: () => null } as unknown as ReportCtx
    const r = await timeReport(ctx, (i) => ({
      brandId: 1,
      affiliateId: ((i * 37) % AFFILIATES) + 1,
      from: month,
      to: month + span,
      dimension: 'sub1',
    }))
    console.log(
      `one affiliate's month by sub1 (${r.last.totals.registrations} registrations, ${r.last.rows.length} groups): p50 ${r.p50.toFixed(1)} ms, p99 ${r.p99.toFixed(1)} ms (goal p99 < 100 ms)`,
    )
    for (const dimension of ['day', 'link', 'country'] as const) {
      const d = await timeReport(
        ctx,
        { brandId: 1, affiliateId: 1, from: month, to: month + span, dimension },
        50,
      )
      console.log(`  by ${dimension}: p50 ${d.p50.toFixed(1)} ms, p99 ${d.p99.toFixed(1)} ms`)
    }
  } finally {
    database.close()
    rmSync(dir, { recursive: true, force: true })
  }
}
