// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
// The edge-parity probe's affiliate finding: GET /api/affiliate/v1/customers read each row's customer and
// attribution on its own (two cache reads, and a database read on a miss, per row): at the edge a page of
// 500 cost 1,079 subrequests and sqld refused. What a request spends is counted here in statements and
// cache calls, whatever the page's size; the cabinet's conversion list (tracking per row) likewise.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { MemoryStore } from '../../src/kernel/cache/memory'
import { ManualClock } from '../../src/kernel/clock'
import { makeTestApp, type TestApp } from '../support/app'
import { SubrequestCounter } from '../support/subrequests'

const clock = new ManualClock(Date.now())
const CAB = 'affiliates.localhost'
let t: TestApp
let token: string
let session: string
let bulkIds: Set<number>

/** What a request spends of a Worker invocation's subrequests. */
const count = new SubrequestCounter()

/** What one request spends, with the customers' cached records gone (their 30 s TTL, or another instance). */
async function spent<T>(f: () => Promise<T>) {
  await t.ctx.store.del(...Array.from({ length: 700 }, (_, i) => `cust:v1:${i + 1}`))
  count.reset()
  const r = await f()
  const { statements, cacheCalls } = count
  return { r, statements, cacheCalls }
}

beforeAll(async () => {
  t = await makeTestApp({ clock, store: count.store(new MemoryStore(clock)) })
  count.watch(t)
  const staff = await t.staffToken()
  const issued = await t.request('POST', '/manager/affiliates/1/tokens', {
    token: staff,
    body: { scopes: ['customers:read', 'transactions:read'], expires_in_days: 30 },
  })
  expect(issued.status).toBe(200)
  token = issued.json.token
  const login = await t.request('POST', '/api/affiliate/login', {
    host: CAB,
    body: { login: 'partner@example.com', password: 'partner-pass-1' },
    headers: { origin: `http://${CAB}` },
  })
  expect(login.status).toBe(200)
  session = /tcs_aff=([^;]*)/.exec(login.headers.get('set-cookie') ?? '')?.[1] ?? ''

  // 500 customers referred by the demo partner (affiliate 1), each with its registration conversion: clones
  // of the demo's referred customer 4 and of its registration row (as the probe seeded them)
  await t.ctx.db.run(
    sql.raw(`with recursive n(i) as (select 1 union all select i + 1 from n where i < 500)
     insert into customers (brand_id, email, password_hash, name, phone, country, deposit_allowed,
       withdrawal_allowed, enabled, attribution, created_at, session_epoch)
     select brand_id, 'bulk-' || i || '@example.com', password_hash, name, phone, country, deposit_allowed,
       withdrawal_allowed, enabled, attribution, created_at, session_epoch from customers, n where id = 4`),
  )
  await t.ctx.db.run(
    sql.raw(`insert into affiliate_conversions (brand_id, affiliate_id, link_id, customer_id, kind, key,
       value_minor, currency, reference_id, event_time, event_id, created_at, updated_at)
     select c.brand_id, 1, 1, c.id, 'registration', 'registration', null, '', c.id, ${clock.now() - 3_600_000} - c.id,
       -1000 - c.id, v.created_at, v.updated_at
     from customers c, affiliate_conversions v
     where c.email like 'bulk-%' and v.affiliate_id = 1 and v.kind = 'registration' and v.customer_id = 4`),
  )
  const ids = await t.ctx.db.all<{ id: number }>(
    sql.raw(`select id from customers where email like 'bulk-%'`),
  )
  bulkIds = new Set(ids.map((r) => Number(r.id)))
}, 120_000)
afterAll(() => t.close())

describe('list pages read their rows in a handful of statements, whatever their size', () => {
  test('GET /api/affiliate/v1/customers: a page of 100 or 500 costs the same few statements and cache calls, each row as before', async () => {
    const page = (size: number) =>
      t.request('GET', `/api/affiliate/v1/customers?page_size=${size}`, { host: CAB, token })
    // the token's first use writes its last-used time: not what a page costs
    expect((await page(1)).status).toBe(200)
    const small = await spent(() => page(100))
    const big = await spent(() => page(500))
    expect([small.r.status, small.r.json.rows.length]).toEqual([200, 100])
    expect([big.r.status, big.r.json.rows.length]).toEqual([200, 500])
    // the rows still carry the customer's country and the values it was referred with (those of customer 4)
    const all = (await t.request('GET', '/api/affiliate/v1/customers?page_size=1500', { host: CAB, token }))
      .json.rows as Record<string, unknown>[]
    const model = all.find((r) => r.customer_id === 4)!
    const bulk = (big.r.json.rows as Record<string, unknown>[]).filter((r) =>
      bulkIds.has(r.customer_id as number),
    )
    expect(bulk.length).toBe(500)
    for (const r of bulk)
      for (const k of ['country', 'campaign', 'utm_source', 'utm_campaign', 'sub1', 'click_id', 'link_code'])
        expect([r.customer_id, k, r[k]]).toEqual([r.customer_id, k, model[k]])
    // the token's check, its rate limit, the page, its milestones, its links, its customers: not one per row
    expect(big.statements).toBeLessThanOrEqual(10)
    expect(big.cacheCalls).toBeLessThanOrEqual(10)
    expect(big.statements).toBe(small.statements)
    expect(big.cacheCalls).toBe(small.cacheCalls)
  })

  test("the cabinet's GET /api/affiliate/conversions (tracking per row): a page of 200 costs a handful of statements and cache calls", async () => {
    const page = (limit: number) =>
      t.request('GET', `/api/affiliate/conversions?limit=${limit}`, {
        host: CAB,
        headers: { cookie: `tcs_aff=${session}` },
      })
    const small = await spent(() => page(20))
    const big = await spent(() => page(200))
    expect([small.r.status, big.r.status]).toEqual([200, 200])
    expect(big.r.json.rows.length).toBe(200)
    expect(big.statements).toBeLessThanOrEqual(10)
    expect(big.cacheCalls).toBeLessThanOrEqual(10)
    expect(big.statements).toBe(small.statements)
    expect(big.cacheCalls).toBe(small.cacheCalls)
  })
})
