// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
// copytrade edge-parity probe: three lists read one account (and group) per row through the shared cache,
// falling back to one database read per row when it was cold. At the edge each is a subrequest (1,000 a
// Worker invocation): GET /copytrade/master/followers of a master with 500 followers made 835 and sqld
// refused (503), staff GET /manager/copytrade/subscriptions?limit=500 made 1,067 with a warm cache, and a
// customer's GET /copytrade/subscriptions had no limit and made ~3 per row. Here the database statements
// and cache calls of one request are counted (a Worker spends one subrequest on each): a page costs a
// few, whatever its size; the lists page with before/after and limit.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { MemoryStore } from '../../src/kernel/cache/memory'
import { makeTestApp, type TestApp } from '../support/app'

const FOLLOWERS = 500
/** What one page may cost, whatever its size (the session's and the master's reads included). */
const STATEMENTS_MAX = 15
const CACHE_CALLS_MAX = 25

let t: TestApp
let customer: string
let staff: string
const inner = new MemoryStore()
let counting = false
let cacheCalls = 0
let statements = 0

/** The store, counting the calls a request makes of it (a Redis or Upstash round trip each). */
const store = new Proxy(inner, {
  get(target, prop) {
    const v = Reflect.get(target, prop, target)
    if (typeof v !== 'function') return v
    return (...a: unknown[]) => {
      // peek is the in-process store's synchronous read: no round trip
      if (counting && prop !== 'peek') cacheCalls++
      return (v as (...x: unknown[]) => unknown).apply(target, a)
    }
  },
})

/** The database statements and cache calls of one request. */
async function spent<T>(f: () => Promise<T>) {
  statements = 0
  cacheCalls = 0
  counting = true
  try {
    const r = await f()
    return { r, statements, cacheCalls }
  } finally {
    counting = false
  }
}

/** The cache as its 30 s TTL leaves it: accounts, customers and groups gone. */
function coldCache() {
  const map = (inner as unknown as { map: Map<string, unknown> }).map
  for (const k of [...map.keys()]) if (/^(acct|cust|grp):v1:/.test(k)) map.delete(k)
}

async function sql(text: string, args: (string | number)[] = []) {
  return (await t.ctx.db.execute({ sql: text, args })).rows
}

const get = (path: string, token: string) => t.request('GET', path, { token })

beforeAll(async () => {
  t = await makeTestApp({ store })
  // every statement sent outside a transaction (the reads of these routes) is counted
  const client = t.ctx.db.client as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>
  for (const name of ['execute', 'batch'] as const) {
    const original = client[name]!.bind(client)
    client[name] = (...a: unknown[]) => {
      if (counting) statements += name === 'batch' ? (a[0] as unknown[]).length : 1
      return original(...a)
    }
  }
  customer = await t.customerToken()
  staff = await t.staffToken()
  // the demo master (id 1, show_followers 1) with 500 live followers: 100001, and 499 clones of it
  // (accounts of the demo customer in its three groups: REAL USD, DEMO USD, REAL EUR) each following it
  expect(
    (
      await t.request('POST', '/copytrade/follower', {
        token: customer,
        body: { login: 100001, defaults: { volume_mode: 1, volume_param: 1, max_positions: 0 } },
      })
    ).status,
  ).toBe(200)
  const version = (await get('/copytrade/masters/1', customer)).json.policy_version
  const sub = await t.request('POST', '/copytrade/subscription', {
    token: customer,
    body: { follower_login: 100001, master_id: 1, policy_version: version, max_positions: 0 },
  })
  expect(sub.status).toBe(200)
  const groupOf = Object.fromEntries(
    (await sql('select login, group_id from accounts where login in (100001, 100002, 100003)')).map((r) => [
      Number(r.login),
      Number(r.group_id),
    ]),
  )
  const accountCols = (await t.ctx.db.execute('select * from accounts limit 1')).columns
  await sql(
    `with recursive n(i) as (select 1 union all select i + 1 from n where i < ${FOLLOWERS - 1})
     insert into accounts (${accountCols.join(',')})
     select ${accountCols
       .map((c) =>
         c === 'login'
           ? '900000 + i'
           : c === 'group_id'
             ? `case i % 3 when 0 then ${groupOf[100001]} when 1 then ${groupOf[100002]} else ${groupOf[100003]} end`
             : c,
       )
       .join(',')} from accounts, n
     where login = 100001`,
  )
  const subCols = (await t.ctx.db.execute('select * from copy_subscriptions limit 1')).columns.filter(
    (c) => c !== 'id',
  )
  await sql(
    `with recursive n(i) as (select 1 union all select i + 1 from n where i < ${FOLLOWERS - 1})
     insert into copy_subscriptions (${subCols.join(',')})
     select ${subCols.map((c) => (c === 'follower_login' ? '900000 + i' : c)).join(',')}
     from copy_subscriptions, n where id = ?`,
    [sub.json.id],
  )
  // a few paused: the counts are of the whole list, not of a page
  await sql('update copy_subscriptions set status = 1 where follower_login between 900001 and 900007')
}, 120_000)
afterAll(() => t.close())

/** Each follower's group as the accounts table has it, in the list's order (oldest subscription first). */
async function expectedFollowers() {
  return (
    await sql(
      `select g.account_mode, g.currency from copy_subscriptions s
       join accounts a on a.login = s.follower_login join groups g on g.id = a.group_id
       where s.master_id = 1 and s.status in (0, 1) order by s.id`,
    )
  ).map((r) => ({ account_mode: String(r.account_mode), currency: String(r.currency) }))
}

describe('copytrade lists cost a few reads a page, whatever its size', () => {
  test('GET /copytrade/master/followers of a master with 500 followers: one page by default, a few statements with a cold cache', async () => {
    coldCache()
    const {
      r,
      statements: n,
      cacheCalls: c,
    } = await spent(() => get('/copytrade/master/followers?master_id=1', customer))
    expect(r.status).toBe(200)
    expect([r.json.followers, r.json.active, r.json.paused, r.json.rows.length, r.json.next_after]).toEqual([
      FOLLOWERS,
      FOLLOWERS - 7,
      7,
      FOLLOWERS,
      0,
    ])
    // before the fix: one account read per follower (500+ statements, 1,000+ cache calls)
    expect(n).toBeLessThanOrEqual(STATEMENTS_MAX)
    expect(c).toBeLessThanOrEqual(CACHE_CALLS_MAX)
    // each row with its follower's own group: the three of the clones
    const want = await expectedFollowers()
    expect(
      r.json.rows.map((x: { account_mode: string; currency: string }) => ({
        account_mode: x.account_mode,
        currency: x.currency,
      })),
    ).toEqual(want)
    expect(new Set(want.map((w) => `${w.account_mode} ${w.currency}`)).size).toBe(3)
    expect(r.json.rows.map((x: { n: number }) => x.n)).toEqual(
      Array.from({ length: FOLLOWERS }, (_, i) => i + 1),
    )
  })

  test('the followers page with limit and after: n counts on, the counts stay those of the whole list', async () => {
    const whole = (await get('/copytrade/master/followers?master_id=1', customer)).json.rows
    const rows: unknown[] = []
    let after = 0
    let pages = 0
    do {
      const { r, statements: n } = await spent(() =>
        get(`/copytrade/master/followers?master_id=1&limit=200${after ? `&after=${after}` : ''}`, customer),
      )
      expect(r.status).toBe(200)
      expect([r.json.followers, r.json.active, r.json.paused]).toEqual([FOLLOWERS, FOLLOWERS - 7, 7])
      expect(n).toBeLessThanOrEqual(STATEMENTS_MAX)
      rows.push(...r.json.rows)
      after = r.json.next_after
      pages++
    } while (after !== 0 && pages < 10)
    expect(pages).toBe(3)
    expect(rows).toEqual(whole)
    // the maximum, documented, and a limit beyond it named
    expect((await get('/copytrade/master/followers?master_id=1&limit=1000', customer)).status).toBe(200)
    const tooMany = await get('/copytrade/master/followers?master_id=1&limit=1001', customer)
    expect([tooMany.status, tooMany.json.error]).toEqual([400, 'INVALID_DATA'])
    expect(tooMany.json.message).toMatch(/^query limit:/)
    const doc = (await t.request('GET', '/swagger/json')).json
    const params = doc.paths['/copytrade/master/followers'].get.parameters as {
      name: string
      schema: unknown
    }[]
    expect(params.map((p) => p.name).sort()).toEqual(['after', 'limit', 'master_id'])
    expect(params.find((p) => p.name === 'limit')!.schema).toMatchObject({ minimum: 1, maximum: 1000 })
  })

  test("staff GET /manager/copytrade/subscriptions?limit=500: the page's currencies in one read, a few cache calls with a warm cache", async () => {
    const list = () => get('/manager/copytrade/subscriptions?limit=500', staff)
    await list()
    const { r, statements: n, cacheCalls: c } = await spent(list)
    expect([r.status, r.json.rows.length]).toEqual([200, 500])
    // before the fix: an account and a group read through the cache per row (1,000+ calls)
    expect(c).toBeLessThanOrEqual(CACHE_CALLS_MAX)
    expect(n).toBeLessThanOrEqual(STATEMENTS_MAX)
    coldCache()
    const cold = await spent(list)
    expect(cold.statements).toBeLessThanOrEqual(STATEMENTS_MAX)
    expect(cold.cacheCalls).toBeLessThanOrEqual(CACHE_CALLS_MAX)
    // each row in its follower's currency
    const want = Object.fromEntries(
      (
        await sql(
          `select s.id, g.currency from copy_subscriptions s join accounts a on a.login = s.follower_login
           join groups g on g.id = a.group_id`,
        )
      ).map((x) => [Number(x.id), String(x.currency)]),
    )
    for (const row of r.json.rows as { id: number; currency: string }[])
      expect(row.currency).toBe(want[row.id]!)
  })

  test("a customer's GET /copytrade/subscriptions pages (before, limit) and costs a few reads a page", async () => {
    // the default page is the largest (a client that never paged keeps what it can); 100 a page here
    const first = await spent(() => get('/copytrade/subscriptions?limit=100', customer))
    expect(first.r.status).toBe(200)
    expect(first.r.json.rows).toHaveLength(100)
    expect(first.r.json.next_before).toBe(first.r.json.rows[99].id)
    const byDefault = await get('/copytrade/subscriptions', customer)
    expect(byDefault.json.rows).toHaveLength(500)
    const all: { id: number; currency: string; terms_pending: boolean }[] = []
    let before = 0
    let pages = 0
    do {
      coldCache()
      const {
        r,
        statements: n,
        cacheCalls: c,
      } = await spent(() =>
        get(`/copytrade/subscriptions?limit=500${before ? `&before=${before}` : ''}`, customer),
      )
      expect(r.status).toBe(200)
      // before the fix: a currency and a master version per row (3 subrequests each)
      expect(n).toBeLessThanOrEqual(STATEMENTS_MAX)
      expect(c).toBeLessThanOrEqual(CACHE_CALLS_MAX)
      all.push(...r.json.rows)
      before = r.json.next_before
      pages++
    } while (before !== 0 && pages < 10)
    const ids = all.map((s) => s.id)
    expect(ids).toEqual([...ids].sort((a, b) => b - a))
    expect(new Set(ids).size).toBe(all.length)
    const total = Number(
      (
        await sql(
          'select count(*) as n from copy_subscriptions where customer_id = (select customer_id from accounts where login = 100001)',
        )
      )[0]!.n,
    )
    expect(all).toHaveLength(total)
    expect(total).toBeGreaterThanOrEqual(FOLLOWERS)
    // the master's terms unchanged since: none pending; currencies of the followers' groups
    expect(all.every((s) => s.terms_pending === false)).toBe(true)
    expect(new Set(all.map((s) => s.currency))).toEqual(new Set(['USD', 'EUR']))
    const tooMany = await get('/copytrade/subscriptions?limit=501', customer)
    expect([tooMany.status, tooMany.json.error]).toEqual([400, 'INVALID_DATA'])
    expect(tooMany.json.message).toMatch(/^query limit:/)
    const doc = (await t.request('GET', '/swagger/json')).json
    const params = doc.paths['/copytrade/subscriptions'].get.parameters as { name: string }[]
    expect(params.map((p) => p.name).sort()).toEqual(['before', 'limit'])
  })

  test("terms_pending in the customer list follows each master's policy version", async () => {
    // the demo master's terms move on: every subscription to it has newer terms to accept
    await sql('update copy_masters set policy_version = policy_version + 1 where id = 1')
    try {
      const r = await get('/copytrade/subscriptions?limit=10', customer)
      expect(r.status).toBe(200)
      expect(
        r.json.rows.every(
          (s: { master_id: number; terms_pending: boolean }) => s.master_id !== 1 || s.terms_pending,
        ),
      ).toBe(true)
    } finally {
      await sql('update copy_masters set policy_version = policy_version - 1 where id = 1')
    }
  })
})
