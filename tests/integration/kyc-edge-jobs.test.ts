// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
// The edge-jobs probe's kyc findings: at the edge (Workers scheduled() every minute) ALL jobs due in one
// invocation share its 1,000 subrequests, each statement to the database and each cache call one.
// kyc.expire moved 400 lapsed passports one document's transaction at a time (about 9 statements each:
// 3,603 subrequests) and kyc.recompute 400 profiles one transaction each (3,207). Here each job runs with
// the module's context given the edge flag, as the Worker's is, and what one run sends to the database and
// the cache is counted: a bounded part of the backlog a run, the rest on the next runs, every document,
// step and profile as the old jobs left them, each event once.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { ResultSet } from '@libsql/client'
import { sql } from 'drizzle-orm'
import { MemoryStore } from '../../src/kernel/cache/memory'
import type { KycCtx } from '../../src/modules/kyc/context'
import { DEFAULT_SETTINGS } from '../../src/modules/kyc/domain/settings'
import { expireDocuments, recomputeProfiles } from '../../src/modules/kyc/service'
import { UploadsPort } from '../../src/modules/uploads'
import { makeTestApp, type TestApp } from '../support/app'
import { SubrequestCounter } from '../support/subrequests'

const BULK = 400
/** What one run of a job may spend of the invocation's 1,000 (every other due job shares the rest). */
const RUN_BUDGET = 200

let t: TestApp
let edge: KycCtx

/** What a request or a job spends of a Worker invocation's subrequests. */
const count = new SubrequestCounter()

/**
 * What `f` spends of a Worker invocation's subrequests. The relay is paused meanwhile: a Bun server's
 * commit wakes it to deliver the events at once, the Worker's does not (events are another job's there).
 */
function spent<T>(f: () => Promise<T>) {
  return t.app.relay.whilePaused(async () => {
    count.reset()
    const r = await f()
    const { statements, transactions, cacheCalls, total } = count
    return { r, statements, transactions, cacheCalls, total }
  })
}

const rows = async (q: string) => (await t.ctx.db.execute(q)) as ResultSet
const n = async (q: string) => Number((await rows(q)).rows[0]!.n)
/** Profiles stored before their brand's settings (kyc.recompute's backlog). */
const STALE = `select count(*) as n from kyc_profiles p join kyc_settings s on s.brand_id = p.brand_id where p.updated_at < s.updated_at`
const BULK_CUSTOMERS = `(select id from customers where email like 'kyc-bulk-%')`

beforeAll(async () => {
  t = await makeTestApp({ store: count.store(new MemoryStore()) })
  count.watch(t)
  // the kyc module's context as the Worker builds it (src/modules/kyc/index.ts with k.edge)
  edge = { ...t.ctx, edge: true, uploads: t.ports.get(UploadsPort) }
  const now = t.ctx.clock.now()
  // BULK customers of the demo brand (clones of demo customer 1), each with a profile, an approved
  // identity step and the one approved passport it was approved on, whose validity ended an hour ago
  await t.ctx.db.run(
    sql.raw(`with recursive n(i) as (select 1 union all select i + 1 from n where i < ${BULK})
     insert into customers (brand_id, email, password_hash, name, phone, country, deposit_allowed,
       withdrawal_allowed, enabled, attribution, created_at, session_epoch)
     select brand_id, 'kyc-bulk-' || i || '@example.com', password_hash, name, phone, country, deposit_allowed,
       withdrawal_allowed, enabled, attribution, created_at, session_epoch from customers, n where id = 1`),
  )
  await t.ctx.db.run(
    sql.raw(`insert into kyc_profiles (brand_id, customer_id, status, created_at, updated_at)
     select brand_id, id, 'in_progress', ${now - 86_400_000}, ${now - 86_400_000} from customers where email like 'kyc-bulk-%'`),
  )
  await t.ctx.db.run(
    sql.raw(`insert into kyc_steps (brand_id, customer_id, code, status, updated_at)
     select brand_id, id, 'identity', 'approved', ${now - 86_400_000} from customers where email like 'kyc-bulk-%'`),
  )
  await t.ctx.db.run(
    sql.raw(`insert into kyc_documents (brand_id, customer_id, step_code, file_id, document_type, status, valid_until, created_at)
     select brand_id, id, 'identity', 'file-' || id, 'passport', 'approved', ${now - 3_600_000}, ${now - 86_400_000}
     from customers where email like 'kyc-bulk-%'`),
  )
}, 120_000)
afterAll(() => t.close())

describe('the kyc jobs at the edge spend a bounded part of a scheduled() invocation and finish the backlog over runs', () => {
  test(`kyc.recompute after a settings save over ${BULK} profiles: each run under ${RUN_BUDGET} subrequests, every profile recomputed, each event once`, async () => {
    // staff make every step but identity optional and let withdrawals through: every profile was stored
    // before the settings, and each of the bulk's (identity approved) is now approved
    const staff = await t.staffToken()
    const settings = (await t.request('GET', '/manager/kyc/settings', { token: staff })).json
    const saved = await t.request('PUT', '/manager/kyc/settings', {
      token: staff,
      body: {
        steps: settings.steps.map((s: { id?: string; code: string }) => ({
          ...s,
          required: s.code === 'identity',
        })),
        tiers: { ...settings.tiers, withdrawal_after: [] },
      },
    })
    expect(saved.status).toBe(200)
    const runs: number[] = []
    for (let run = 0; run < 20; run++) {
      const m = await spent(() => recomputeProfiles({ ctx: edge }))
      runs.push(m.total)
      if ((await n(STALE)) === 0) break
    }
    // before: one run of 3,200+ (one transaction per profile)
    for (const r of runs) expect(r).toBeLessThanOrEqual(RUN_BUDGET)
    // over successive runs every profile is stored under the new settings
    expect(await n(STALE)).toBe(0)
    expect(
      await n(
        `select count(*) as n from kyc_profiles where status = 'approved' and customer_id in ${BULK_CUSTOMERS}`,
      ),
    ).toBe(BULK)
    // each profile got a row for every configured step
    expect(await n(`select count(*) as n from kyc_steps where customer_id in ${BULK_CUSTOMERS}`)).toBe(
      BULK * settings.steps.length,
    )
    // one kyc.approved per bulk profile, and another run emits none
    const approved = `select count(distinct json_extract(payload, '$.customer_id')) as n, count(*) as total from outbox
       where topic = 'kyc.approved' and json_extract(payload, '$.customer_id') in ${BULK_CUSTOMERS}`
    expect((await rows(approved)).rows[0]).toMatchObject({ n: BULK, total: BULK })
    const again = await spent(() => recomputeProfiles({ ctx: edge }))
    expect(again.total).toBeLessThanOrEqual(10)
    expect((await rows(approved)).rows[0]).toMatchObject({ n: BULK, total: BULK })
  }, 120_000)

  test('kyc.recompute after a save that moves no status (the withdrawal tier only, as the probe saved): each run under the budget, every profile marked, no event', async () => {
    const staff = await t.staffToken()
    const settings = (await t.request('GET', '/manager/kyc/settings', { token: staff })).json
    const events = await n('select count(*) as n from outbox')
    const saved = await t.request('PUT', '/manager/kyc/settings', {
      token: staff,
      body: { steps: settings.steps, tiers: { ...settings.tiers, withdrawal_after: ['identity'] } },
    })
    expect(saved.status).toBe(200)
    const runs: number[] = []
    for (let run = 0; run < 20 && (await n(STALE)) > 0; run++)
      runs.push((await spent(() => recomputeProfiles({ ctx: edge }))).total)
    for (const r of runs) expect(r).toBeLessThanOrEqual(RUN_BUDGET)
    expect(await n(STALE)).toBe(0)
    expect(await n('select count(*) as n from outbox')).toBe(events)
  }, 120_000)

  test(`kyc.expire on a day when ${BULK} passports lapsed: each run under ${RUN_BUDGET} subrequests, and successive runs expire them all`, async () => {
    const runs: { total: number; expired: number }[] = []
    for (let run = 0; run < 20; run++) {
      const m = await spent(() => expireDocuments({ ctx: edge }))
      runs.push({ total: m.total, expired: m.r })
      if (m.r === 0) break
    }
    // before: one run of 3,600+ (one transaction per document)
    for (const r of runs) expect(r.total).toBeLessThanOrEqual(RUN_BUDGET)
    expect(runs.reduce((a, r) => a + r.expired, 0)).toBe(BULK)
    // every passport, every identity step approved on it and every profile that rested on it expired
    const bulk = (table: string, status: string) =>
      n(`select count(*) as n from ${table} where status = '${status}' and customer_id in ${BULK_CUSTOMERS}`)
    expect(await bulk('kyc_documents', 'expired')).toBe(BULK)
    expect(await bulk('kyc_documents', 'approved')).toBe(0)
    expect(await bulk('kyc_steps', 'expired')).toBe(BULK)
    expect(await bulk('kyc_profiles', 'expired')).toBe(BULK)
    expect(
      await n(
        `select count(*) as n from kyc_steps where code = 'identity' and rejection_reason = 'the document has expired' and customer_id in ${BULK_CUSTOMERS}`,
      ),
    ).toBe(BULK)
    // the customer sees it: asked again for the identity step
    const one = Number(
      (await rows(`select id from customers where email = 'kyc-bulk-7@example.com'`)).rows[0]!.id,
    )
    const [step] = (
      await rows(`select status from kyc_steps where customer_id = ${one} and code = 'identity'`)
    ).rows
    expect(step!.status).toBe('expired')
  }, 120_000)

  test('two instances expiring the same lapsed documents at once: each document moves once, its step and profile once', async () => {
    const now = t.ctx.clock.now()
    // 50 of the bulk approved again on a new passport, which lapsed in turn
    await t.ctx.db.run(
      sql.raw(`update kyc_steps set status = 'approved', rejection_reason = '' where code = 'identity'
       and customer_id in (select id from customers where email like 'kyc-bulk-%' order by id limit 50)`),
    )
    await t.ctx.db.run(
      sql.raw(`update kyc_profiles set status = 'approved'
       where customer_id in (select id from customers where email like 'kyc-bulk-%' order by id limit 50)`),
    )
    await t.ctx.db.run(
      sql.raw(`insert into kyc_documents (brand_id, customer_id, step_code, file_id, document_type, status, valid_until, created_at)
       select brand_id, id, 'identity', 'file-again-' || id, 'passport', 'approved', ${now - 1000}, ${now - 5000}
       from customers where email like 'kyc-bulk-%' order by id limit 50`),
    )
    const [a, b] = await Promise.all([expireDocuments({ ctx: edge }), expireDocuments({ ctx: edge })])
    expect(a + b).toBe(50)
    expect(
      await n(
        `select count(*) as n from kyc_documents where file_id like 'file-again-%' and status = 'expired'`,
      ),
    ).toBe(50)
    expect(
      await n(
        `select count(*) as n from kyc_profiles where status = 'expired' and customer_id in ${BULK_CUSTOMERS}`,
      ),
    ).toBe(BULK)
    // nothing left: a run costs its one read
    const m = await spent(() => expireDocuments({ ctx: edge }))
    expect(m.r).toBe(0)
    expect(m.total).toBeLessThanOrEqual(2)
  })
})

// The edge-jobs review of d74f9dc (kyc with several brands): kyc.recompute's run bound was spent on brands
// with nothing to do (every brand that ever saved settings took a page and a transaction, in the same
// order every run: a stale profile of the 6th never got one), and kyc.expire's cost went with the brands
// of a page (100 lapsed documents of 100 brands: 100 transactions, 902 statements in one run).
describe('the kyc jobs at the edge with many brands', () => {
  test('kyc.recompute at the edge: a stale profile of the 6th brand with settings is recomputed within a few runs', async () => {
    const now = t.ctx.clock.now()
    const settings = JSON.stringify(DEFAULT_SETTINGS)
    // six brands saved their settings; only the last has a profile stored before them
    for (let b = 101; b <= 106; b++)
      await t.ctx.db.run(
        sql.raw(
          `insert or replace into kyc_settings (brand_id, settings, updated_at) values (${b}, '${settings}', ${now})`,
        ),
      )
    await t.ctx.db.run(
      sql.raw(
        `insert into kyc_profiles (brand_id, customer_id, status, created_at, updated_at) values (106, 9000001, 'not_started', ${now - 86_400_000}, ${now - 86_400_000})`,
      ),
    )
    for (let run = 0; run < 10; run++) await recomputeProfiles({ ctx: edge })
    const [p] = (
      await rows(`select updated_at from kyc_profiles where brand_id = 106 and customer_id = 9000001`)
    ).rows
    expect(Number(p!.updated_at)).toBeGreaterThanOrEqual(now)
  }, 60_000)

  test('kyc.recompute with no profile stored before its settings: one read a run and no transaction, at the edge and elsewhere', async () => {
    // six brands saved settings that no profile of theirs predates, and every profile is stored under
    // its brand's settings
    const now = t.ctx.clock.now()
    for (let b = 111; b <= 116; b++)
      await t.ctx.db.run(
        sql.raw(
          `insert or replace into kyc_settings (brand_id, settings, updated_at) values (${b}, '${JSON.stringify(DEFAULT_SETTINGS)}', ${now})`,
        ),
      )
    await t.ctx.db.run(
      sql.raw(`update kyc_profiles set updated_at = (select s.updated_at from kyc_settings s where s.brand_id = kyc_profiles.brand_id)
       where updated_at < (select s.updated_at from kyc_settings s where s.brand_id = kyc_profiles.brand_id)`),
    )
    expect(await n(STALE)).toBe(0)
    const atEdge = await spent(() => recomputeProfiles({ ctx: edge }))
    expect([atEdge.transactions, atEdge.statements]).toEqual([0, 1])
    const server = await spent(() => recomputeProfiles({ ctx: { ...edge, edge: false } }))
    expect([server.transactions, server.statements]).toEqual([0, 1])
  })

  test('kyc.expire at the edge: 100 lapsed documents of 100 brands cost one run under 200 subrequests (README: about 40), and successive runs expire them all', async () => {
    const now = t.ctx.clock.now()
    for (let b = 201; b <= 300; b++) {
      const c = 8000000 + b
      await t.ctx.db.run(
        sql.raw(
          `insert into kyc_profiles (brand_id, customer_id, status, created_at, updated_at) values (${b}, ${c}, 'approved', ${now - 1e6}, ${now - 1e6})`,
        ),
      )
      await t.ctx.db.run(
        sql.raw(
          `insert into kyc_steps (brand_id, customer_id, code, status, updated_at) values (${b}, ${c}, 'identity', 'approved', ${now - 1e6})`,
        ),
      )
      await t.ctx.db.run(
        sql.raw(
          `insert into kyc_documents (brand_id, customer_id, step_code, file_id, document_type, status, valid_until, created_at) values (${b}, ${c}, 'identity', 'f-${b}', 'passport', 'approved', ${now - 1000}, ${now - 1e6})`,
        ),
      )
    }
    const first = await spent(() => expireDocuments({ ctx: edge }))
    expect(first.statements).toBeLessThanOrEqual(200)
    // before: 902 statements in this one run; the rest goes over the next runs, each as bounded
    let expired = first.r
    for (let run = 0; run < 100 && expired < 100; run++) {
      const m = await spent(() => expireDocuments({ ctx: edge }))
      expect(m.statements).toBeLessThanOrEqual(200)
      expect(m.r).toBeGreaterThan(0)
      expired += m.r
    }
    expect(expired).toBe(100)
    const many = (table: string, status: string) =>
      n(`select count(*) as n from ${table} where status = '${status}' and brand_id between 201 and 300`)
    expect(await many('kyc_documents', 'expired')).toBe(100)
    expect(await many('kyc_steps', 'expired')).toBe(100)
    expect(await many('kyc_profiles', 'expired')).toBe(100)
    const after = await spent(() => expireDocuments({ ctx: edge }))
    expect([after.r, after.transactions, after.statements]).toEqual([0, 0, 1])
  }, 60_000)
})
