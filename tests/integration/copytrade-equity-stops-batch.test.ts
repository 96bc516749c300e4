// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
// The edge-jobs probe's copytrade finding: copytrade.equity-stops re-read every guarded subscription's
// equity on its own (links, fees, account and group, ~6 subrequests each) every minute, whether anything
// moved or not: 400 quiet subscriptions cost 2,406 of the 1,000 subrequests a Worker's scheduled()
// invocation shares with every job due in it, and the fixed order left those past ~150 never checked at
// the edge. A page's equity is now read in a few set reads, and at the edge a run walks one page after a
// cursor in the shared cache. The makeTestApp app is a Bun server: the job is given the module's context
// with the edge flag here, as the Worker builds it (src/modules/copytrade/index.ts with k.edge).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { MemoryStore } from '../../src/kernel/cache/memory'
import { AccountsPort } from '../../src/modules/accounts'
import type { CopyCtx } from '../../src/modules/copytrade/context'
import {
  EDGE_STOPS_PER_RUN,
  EQUITY_STOP_CURSOR,
  EQUITY_STOP_PAGE,
  runEquityStop,
} from '../../src/modules/copytrade/copier/equity-stop'
import { MarketPort } from '../../src/modules/market'
import { TradingPort } from '../../src/modules/trading'
import { makeTestApp, type TestApp } from '../support/app'
import { SubrequestCounter } from '../support/subrequests'

/** What a run spends of a Worker invocation's subrequests. */
const count = new SubrequestCounter()

let t: TestApp
let edge: CopyCtx
let server: CopyCtx

/** What one run of the job spends: statements and cache calls, each a subrequest at the edge. */
async function run(ctx: CopyCtx) {
  count.reset()
  await runEquityStop(ctx)
  const { statements, cacheCalls, total } = count
  return { statements, cacheCalls, total }
}

/** `n` followers (clones of the demo's 100001, logins from `from + 1`), each following the demo master. */
async function follow(from: number, n: number) {
  const now = Date.now()
  await t.ctx.db.run(
    sql.raw(`with recursive n(i) as (select 1 union all select i + 1 from n where i < ${n})
     insert into accounts (login, brand_id, customer_id, group_id, password_hash, leverage, balance, regdate, update_time)
     select ${from} + i, brand_id, customer_id, group_id, password_hash, leverage, 100000, regdate, update_time
     from accounts, n where login = 100001`),
  )
  // an equity stop of 50 % and no copies open now: a quiet minute (on the demo master's terms)
  await t.ctx.db.run(
    sql.raw(`insert into copy_subscriptions (brand_id, customer_id, follower_login, master_id, master_login, status,
       settings, reward_type, reward_params, start_balance_minor, capital_minor, created_at, updated_at)
     select brand_id, customer_id, login, 1, 100004, 0,
       '{"copy_mode":0,"equity_stop":50,"equity_stop_type":1,"volume_mode":1,"volume_param":1,"max_positions":0}',
       3, '{"percent":20}', 100000, 100000, ${now}, ${now}
     from accounts where login > ${from} and login <= ${from + n}`),
  )
}

/** The subscription of a follower login: its id, status and reason. */
async function subOf(login: number) {
  const [r] = await t.ctx.db.all<{ id: number; status: number; status_reason: string }>(
    sql.raw(`select id, status, status_reason from copy_subscriptions where follower_login = ${login}`),
  )
  return { id: Number(r!.id), status: Number(r!.status), reason: r!.status_reason }
}

/** A result lost by copies closed: 60 % of the capital, past the 50 % stop. */
const lose = (login: number) =>
  t.ctx.db.run(sql.raw(`update copy_subscriptions set result_minor = -60000 where follower_login = ${login}`))

const stopped = async () =>
  Number(
    (
      await t.ctx.db.all<{ n: number }>(
        sql.raw('select count(*) as n from copy_subscriptions where follower_login > 300000 and status <> 0'),
      )
    )[0]!.n,
  )

beforeAll(async () => {
  t = await makeTestApp({ store: count.store(new MemoryStore()) })
  count.watch(t)
  const base = {
    ...t.ctx,
    accounts: t.ports.get(AccountsPort),
    market: t.ports.get(MarketPort),
    trading: t.ports.get(TradingPort),
    limit: <T>(fn: () => Promise<T>) => fn(),
    forgetManual: async () => {},
  }
  edge = { ...base, edge: true }
  server = { ...base, edge: false }
  await follow(300000, 400)
}, 180_000)
afterAll(() => t.close())

describe('copytrade.equity-stops reads a page of subscriptions in a handful of set reads', () => {
  test('at the edge, 400 guarded subscriptions, none near its stop, cost a few subrequests, not ~6 each', async () => {
    const m = await run(edge)
    expect(await stopped()).toBe(0)
    // every minute, nothing having moved; the invocation's ~30 other jobs share the same 1,000 (the probe's
    // bound), and it no longer grows with the subscriptions: a page, its closes to come, links, fees owed,
    // the followers' groups (one read, then the demo group once), the cursor read and written
    expect(m.total).toBeLessThanOrEqual(500)
    expect(m.statements).toBeLessThanOrEqual(6)
    expect(m.cacheCalls).toBeLessThanOrEqual(4)
    // the Bun server checks them all, with the same set reads
    const s = await run(server)
    expect(s.statements).toBeLessThanOrEqual(6)
    expect(s.cacheCalls).toBeLessThanOrEqual(2)
  })

  test('at the edge a run walks one page after a cursor: a subscription past the first page is checked in the next run, then the walk starts over', async () => {
    // more guarded subscriptions than a page, the last of them (by id) past its stop
    await follow(300400, EQUITY_STOP_PAGE)
    await t.ctx.store.del(EQUITY_STOP_CURSOR)
    const last = 300400 + EQUITY_STOP_PAGE
    await lose(last)
    const runs: { statements: number; cacheCalls: number; total: number }[] = []
    for (let i = 0; i < 3 && (await subOf(last)).status === 0; i++) runs.push(await run(edge))
    // checked within ceil(n / page) runs (a minute each at the edge), each run a few subrequests
    expect(await subOf(last)).toMatchObject({ status: 1, reason: 'EQUITY_STOP' })
    expect(runs.length).toBeLessThanOrEqual(Math.ceil((400 + EQUITY_STOP_PAGE) / EQUITY_STOP_PAGE))
    for (const r of runs) expect(r.total).toBeLessThanOrEqual(60)
    expect(runs[0]!.statements).toBeLessThanOrEqual(6)
    const [record] = await t.ctx.db.all<{ reason: string; action: string }>(
      sql.raw(`select action, reason from copy_records where subscription_id = ${(await subOf(last)).id}`),
    )
    expect(record).toEqual({ action: 'stop', reason: 'EQUITY_STOP' })
    // the first subscription loses its limit now: the walk comes back to it
    await lose(300001)
    for (let i = 0; i < 3 && (await subOf(300001)).status === 0; i++) await run(edge)
    expect(await subOf(300001)).toMatchObject({ status: 1, reason: 'EQUITY_STOP' })
    expect(await stopped()).toBe(2)
  })

  test('on the Bun server one run checks every guarded subscription, past the first page too', async () => {
    const last = 300400 + EQUITY_STOP_PAGE - 1
    await lose(last)
    const m = await run(server)
    expect(await subOf(last)).toMatchObject({ status: 1, reason: 'EQUITY_STOP' })
    // two pages and one stop, not ~3 reads per subscription
    expect(m.statements).toBeLessThanOrEqual(60)
    expect(await stopped()).toBe(3)
  })

  test(`at the edge a run makes at most ${EDGE_STOPS_PER_RUN} stops; the next run starts at the first left`, async () => {
    await t.ctx.store.del(EQUITY_STOP_CURSOR)
    const losing = Array.from({ length: EDGE_STOPS_PER_RUN + 2 }, (_, i) => 300010 + i)
    for (const l of losing) await lose(l)
    await run(edge)
    expect(await stopped()).toBe(3 + EDGE_STOPS_PER_RUN)
    await run(edge)
    expect(await stopped()).toBe(3 + losing.length)
    for (const l of losing) expect(await subOf(l)).toMatchObject({ status: 1, reason: 'EQUITY_STOP' })
  })
})
