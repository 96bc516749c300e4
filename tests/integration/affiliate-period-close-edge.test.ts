// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
// The edge-jobs probe's affiliate finding: affiliate.period-close read each partner's rounding row on its own
// inside the close's transaction (a SELECT, and maybe an UPDATE or DELETE, per partner): 1,200 RevShare
// partners cost 1,236 statements, past a Worker invocation's 1,000 subrequests, so at the edge the close
// (all or nothing) never committed. The rounding rows are now read and written a page of 500 at a time;
// what the close writes is the same: each rounding row completed, inserted, or deleted when nothing is left.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { ManualClock } from '../../src/kernel/clock'
import { PRICING_SPLIT_MONTHS } from '../../src/modules/affiliate/domain/periods'
import { makeTestApp, type TestApp } from '../support/app'

type Fn = (...a: unknown[]) => Promise<unknown>
const PARTNERS = 1200
const PERIOD = '2026-10'
// the grace days (5) of October have passed: the job closes October
const clock = new ManualClock(Date.UTC(2026, 10, 6, 1))
const at = Date.UTC(2026, 9, 15)
let t: TestApp

/** Each statement, batch and commit, in a transaction or not (a Worker's libSQL HTTP subrequest each). */
let statements = 0
function counted<T extends object>(o: T, names: string[]) {
  const r = o as unknown as Record<string, Fn>
  for (const name of names) {
    const f = r[name]
    if (!f) continue
    const bound = f.bind(o)
    r[name] = (...a: unknown[]) => {
      statements++
      return bound(...a)
    }
  }
  return o
}
function countStatements(app: TestApp) {
  const client = app.ctx.db.client as unknown as Record<string, Fn>
  counted(client, ['execute', 'batch'])
  const begin = client.transaction!.bind(client)
  client.transaction = async (...a: unknown[]) =>
    counted((await begin(...a)) as object, ['execute', 'batch', 'commit'])
}

beforeAll(async () => {
  t = await makeTestApp({ clock })
  countStatements(t)
  // PARTNERS partners of the demo brand on its default plan (the demo's hybrid: RevShare 25 %), clones of
  // the demo partner, each with three RevShare rows of October (each share rounded down to nothing)
  await t.ctx.db.run(
    sql.raw(`with recursive n(i) as (select 1 union all select i + 1 from n where i < ${PARTNERS})
     insert into affiliates (brand_id, email, code, name, status, postback_url, postback_enabled, postback_failures,
       postback_disabled_reason, created_at)
     select brand_id, 'p' || i || '@example.com', 'P' || i, 'Partner ' || i, status, '', 0, 0, '', created_at
     from affiliates, n where id = 1`),
  )
  // a third with a basis of 3 a row (9: 25 % is 2) and no rounding row yet (the close inserts one of 2);
  // a third with the same and a rounding row of 1 (completed to 2); a third with a basis of 1 a row (3:
  // 25 % is 0) and a rounding row of 1 (nothing left of it: deleted)
  await t.ctx.db.run(
    sql.raw(`with recursive n(j) as (select 1 union all select j + 1 from n where j < 3)
     insert into affiliate_commissions (brand_id, affiliate_id, customer_id, kind, key, period, amount_minor,
       currency, basis_minor, rate_bp, plan_id, plan_version, event_time, created_at, updated_at)
     select 1, a.id, 4, 'revshare', 'c4:rev:trade:bulk-' || a.id || '-' || j, '${PERIOD}', 0, 'USD',
       case a.id % 3 when 2 then 1 else 3 end, 2500, 1, 1, ${at}, ${at}, ${at}
     from affiliates a, n where a.email glob 'p[0-9]*@example.com'`),
  )
  await t.ctx.db.run(
    sql.raw(`insert into affiliate_commissions (brand_id, affiliate_id, customer_id, kind, key, period, amount_minor,
       currency, basis_minor, rate_bp, plan_id, plan_version, event_time, created_at, updated_at)
     select 1, a.id, 0, 'revshare', 'round:${PERIOD}:1.1:USD', '${PERIOD}', 1, 'USD', 0, 2500, 1, 1,
       ${at}, ${at}, ${at}
     from affiliates a where a.email glob 'p[0-9]*@example.com' and a.id % 3 in (1, 2)`),
  )
}, 180_000)
afterAll(() => t.close())

test("affiliate.period-close of a brand with 1,200 RevShare partners costs a few statements per 500 partners (a Worker's 1,000 subrequests hold it), each rounding row as before", async () => {
  statements = 0
  const r = await t.app.runner.runOnce('affiliate.period-close')
  const spent = statements
  console.log('affiliate.period-close', JSON.stringify({ r, statements: spent }))
  expect(r.ran).toBe(true)
  const closed = await t.ctx.db.all<{ brand_id: number; period: string }>(
    sql.raw(`select brand_id, period from affiliate_periods order by brand_id`),
  )
  expect(closed.map((c) => [Number(c.brand_id), c.period])).toEqual([
    [1, PERIOD],
    [2, PERIOD],
  ])
  // both demo brands closed, 1,200 partners among them: far below one statement per partner
  expect(spent).toBeLessThanOrEqual(100)

  // each partner's rounding row: inserted (2), completed (1 → 2, updated by the close), or deleted
  const rounding = await t.ctx.db.all<{ id: number; mod: number; amount: number; updated: number }>(
    sql.raw(`select a.id, a.id % 3 as mod, c.amount_minor as amount, c.updated_at as updated
     from affiliates a left join affiliate_commissions c on c.affiliate_id = a.id and c.brand_id = 1
       and c.period = '${PERIOD}' and c.key = 'round:${PERIOD}:1.1:USD' and c.currency = 'USD'
     where a.email glob 'p[0-9]*@example.com' order by a.id`),
  )
  expect(rounding.length).toBe(PARTNERS)
  const now = clock.now()
  for (const row of rounding) {
    const want: (number | null)[] =
      Number(row.mod) === 0
        ? [2, now] // inserted by the close
        : Number(row.mod) === 1
          ? [2, now] // 1 completed to 2
          : [null, null] // 1 taken back to nothing: deleted
    expect<(number | null)[]>([row.id, row.amount, row.updated]).toEqual([row.id, ...want])
  }
  // each partner's statement: its October rows, and their total
  const made = await t.ctx.db.all<{ id: number; mod: number; totals: string; rows: number }>(
    sql.raw(`select a.id, a.id % 3 as mod, s.totals, s.rows from affiliates a
     join affiliate_statements s on s.affiliate_id = a.id and s.brand_id = 1 and s.period = '${PERIOD}'
     where a.email glob 'p[0-9]*@example.com' order by a.id`),
  )
  expect(made.length).toBe(PARTNERS)
  for (const s of made) {
    const want =
      Number(s.mod) === 2
        ? [{ currency: 'USD', amount_minor: 0, rows: 3 }]
        : [{ currency: 'USD', amount_minor: 2, rows: 4 }]
    expect([s.id, JSON.parse(s.totals), Number(s.rows)]).toEqual([s.id, want, want[0]!.rows])
  }
  // every statement of the close (the demo's partners too) totals exactly its rows of the period
  const mismatched = await t.ctx.db.all<{ id: number }>(
    sql.raw(`select s.id from affiliate_statements s
     where s.period = '${PERIOD}' and (s.rows != (select count(*) from affiliate_commissions c
       where c.brand_id = s.brand_id and c.affiliate_id = s.affiliate_id and c.period = s.period)
     or (select coalesce(sum(j.value ->> '$.amount_minor'), 0) from json_each(s.totals) j)
       != (select coalesce(sum(c.amount_minor), 0) from affiliate_commissions c
         where c.brand_id = s.brand_id and c.affiliate_id = s.affiliate_id and c.period = s.period))`),
  )
  expect(mismatched).toEqual([])
})

// The final read of that fix: each reversal's deposit was still looked up one affiliate at a time
// (reversalsIn → firstRows, a SELECT per affiliate with a RevShare reversal, for the period's reversals and
// again for the closed months priced again), so ~900 partners with a refund each passed the 1,000
// subrequests too. The deposits are now read a page of 500 (affiliate, key) pairs at a time.
describe('a close of a brand whose tiered partners each have a refund of a closed month', () => {
  const REFUNDED = 1200
  const clock = new ManualClock(Date.UTC(2026, 10, 6, 1))
  const sep = Date.UTC(2026, 8, 10)
  const oct = Date.UTC(2026, 9, 5)
  let app: TestApp
  let planId = 0

  beforeAll(async () => {
    app = await makeTestApp({ clock })
    countStatements(app)
    const run = (q: string) => app.ctx.db.run(sql.raw(q))
    // a tiered plan whose tier (50 %) every month reaches, each row paid at its base rate (10 %)
    await run(`insert into affiliate_plans (brand_id, name, created_at) values (1, 'tiered refunds', ${sep})`)
    const [plan] = await app.ctx.db.all<{ id: number }>(
      sql.raw(`select id from affiliate_plans where name = 'tiered refunds'`),
    )
    planId = Number(plan!.id)
    const terms = JSON.stringify({
      type: 'tiered_revshare',
      revshare_bp: 1000,
      tiers: [{ from: 0, bp: 5000 }],
      tier_metric: 'volume_lots',
      revshare_basis: 'net_deposits',
      hold_days: 60,
      sub_affiliate_bp: 0,
    })
    await run(`insert into affiliate_plan_versions (plan_id, version, effective_from, terms, created_at)
     values (${planId}, 1, ${Date.UTC(2026, 8, 1)}, '${terms}', ${sep})`)
    await run(`with recursive n(i) as (select 1 union all select i + 1 from n where i < ${REFUNDED})
     insert into affiliates (brand_id, email, code, name, status, postback_url, postback_enabled, postback_failures,
       postback_disabled_reason, created_at)
     select brand_id, 'r' || i || '@example.com', 'R' || i, 'Refunded ' || i, status, '', 0, 0, '', created_at
     from affiliates, n where id = 1`)
    await run(`insert into affiliate_plan_assignments (brand_id, affiliate_id, effective_from, plan_id, created_at)
     select 1, id, ${Date.UTC(2026, 8, 1)}, ${planId}, ${sep} from affiliates where email glob 'r[0-9]*@example.com'`)
    // September (closed, paid at the base rate): two deposits of 10.00 each (1.00 each); October: the
    // first of them refunded (it counts against September, priced again: 10.00 at 50 % less 1.00 paid)
    const row = (kind: string, key: string, period: string, amount: number, basis: number, time: number) =>
      run(`insert into affiliate_commissions (brand_id, affiliate_id, customer_id, kind, key, period, amount_minor,
         currency, basis_minor, rate_bp, plan_id, plan_version, event_time, created_at, updated_at)
       select 1, id, 100000 + id, '${kind}', 'c' || (100000 + id) || ':rev:${key}-' || id, '${period}', ${amount},
         'USD', ${basis}, 1000, ${planId}, 1, ${time}, ${time}, ${time}
       from affiliates where email glob 'r[0-9]*@example.com'`)
    await row('revshare', 'deposit:d1', '2026-09', 100, 1000, sep)
    await row('revshare', 'deposit:d2', '2026-09', 100, 1000, sep + 1000)
    await row('revshare_reversal', 'reversal:d1', '2026-10', -100, -1000, oct)
    await run(`insert into affiliate_periods (brand_id, period, closed_at, closed_by, pricing)
     values (1, '2026-09', ${Date.UTC(2026, 9, 6)}, 0, ${PRICING_SPLIT_MONTHS})`)
  }, 180_000)
  afterAll(() => app.close())

  test("affiliate.period-close with 1,200 refunded tiered partners costs a few statements per 500 partners, each refund against its deposit's month", async () => {
    statements = 0
    const r = await app.app.runner.runOnce('affiliate.period-close')
    const spent = statements
    console.log('affiliate.period-close (refunds)', JSON.stringify({ r, statements: spent }))
    expect(r.ran).toBe(true)
    const closed = await app.ctx.db.all<{ period: string }>(
      sql.raw(`select period from affiliate_periods where brand_id = 1 order by period`),
    )
    expect(closed.map((c) => c.period)).toEqual(['2026-09', '2026-10'])
    // the deposit of each refund, and September priced again, read a page of 500 partners at a time: far
    // below one statement per partner (it was 1,200 deposit reads and more)
    expect(spent).toBeLessThanOrEqual(150)

    // each partner: September priced again with its refund (10.00 left at 50 %: 5.00, 1.00 paid: 4.00),
    // written in October under September's tier key; nothing of October's own tier
    const written = await app.ctx.db.all<{ id: number; kind: string; key: string; amount: number }>(
      sql.raw(`select a.id, c.kind, c.key, c.amount_minor as amount from affiliates a
       join affiliate_commissions c on c.affiliate_id = a.id and c.brand_id = 1 and c.period = '2026-10'
         and c.kind != 'revshare_reversal'
       where a.email glob 'r[0-9]*@example.com' order by a.id, c.key`),
    )
    expect(written.length).toBe(REFUNDED)
    for (const w of written)
      expect([w.id, w.kind, w.key, Number(w.amount)]).toEqual([
        w.id,
        'tier_adjustment',
        `tier:2026-09:${planId}.1:USD`,
        400,
      ])
    const made = await app.ctx.db.all<{ totals: string; rows: number }>(
      sql.raw(`select s.totals, s.rows from affiliates a
       join affiliate_statements s on s.affiliate_id = a.id and s.brand_id = 1 and s.period = '2026-10'
       where a.email glob 'r[0-9]*@example.com'`),
    )
    expect(made.length).toBe(REFUNDED)
    for (const s of made)
      expect([JSON.parse(s.totals), Number(s.rows)]).toEqual([
        [{ currency: 'USD', amount_minor: 300, rows: 2 }],
        2,
      ])
  })
})
