// Copy trading fan-out (issue 31), in one run: one master with 1, 100 and 1,000 active followers, on the
// embedded default (one process, libSQL file) and on two API instances + the engine on sqld + Redis.
//  - latency from the master's fill (orders.open_time) to the last follower's committed fill
//    (copy_records.follower_time) per master trade, p50/p99/max (goals p99: 25 / 100 / 500 ms);
//  - the same from the master's close (orders.close_time) to the last follower's close;
//  - the master's own /trade/open latency with 1,000 followers attached against none (goal: ratio of
//    medians none/1000 >= 0.8: copying must not slow the master's order), the master trading at a human
//    pace (PAUSE_MS after the copies of its last trade settled); back to back printed beside it.
//   bun bench/copytrade.ts            (BENCH_TRADES_1/100/1000 trades per size; DISTRIBUTED=0 to skip)

import { join } from 'node:path'
import { createClient } from '@libsql/client'
import { startRedis } from '../tests/support/redis'
import { call, type RealServer, serverDir, startRealServer } from '../tests/support/server'
import { startSqld } from '../tests/support/sqld'

const TRADES: Record<number, number> = {
  1: Number(process.env.BENCH_TRADES_1 ?? 100),
  100: Number(process.env.BENCH_TRADES_100 ?? 40),
  1000: Number(process.env.BENCH_TRADES_1000 ?? 20),
}
const BASELINE = Number(process.env.BENCH_BASELINE ?? 20)
/** The master trades at a human pace: this long after the copies of its last trade settled. */
const PAUSE_MS = Number(process.env.PAUSE_MS ?? 100)

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] ?? Number.NaN
}
const fmt = (xs: number[]) =>
  `p50 ${pct(xs, 50).toFixed(1)} ms, p99 ${pct(xs, 99).toFixed(1)} ms, max ${Math.max(...xs).toFixed(1)} ms (n=${xs.length})`

async function ok(r: Promise<{ status: number; json: any; text: string }>) {
  const x = await r
  if (x.status !== 200) throw new Error(`${x.status} ${x.text}`)
  return x.json
}

/** Runs the scenario against `api` (requests) with the database at `dbUrl`; prints and returns its figures. */
async function scenario(label: string, api: RealServer, other: RealServer, dbUrl: string) {
  const client = createClient({ url: dbUrl, intMode: 'number' })
  // the bench's own polling may meet sqld's concurrency limit (429) while the servers work: retry
  const db = {
    async execute(q: string | { sql: string; args: number[] }) {
      for (let i = 0; ; i++) {
        try {
          return await client.execute(q)
        } catch (e) {
          if (i > 50) throw e
          await Bun.sleep(20)
        }
      }
    },
    close: () => client.close(),
  }
  const token = async (path: string, body: unknown) =>
    (await ok(call(api.url, 'POST', path, { body }))).__token as string
  const manager = await token('/manager/sign/in', { login: 1, password: 'manager-pass-1' })
  const dealer = await token('/manager/sign/in', { login: 3, password: 'dealer-pass-1' })
  const demo = await token('/customer/sign/in', { email: 'demo@example.com', password: 'demo-pass-1' })
  const masterUser = await token('/sign/in', { login: 100004, password: 'master-pass-1' })
  const customerId = (await ok(call(api.url, 'GET', '/customer/me', { token: demo }))).id as number
  const listed = (await ok(call(api.url, 'GET', '/copytrade/masters', { token: demo }))).rows[0]
  const masterId = listed.id as number
  const policyVersion = listed.policy_version as number
  // quotes through the other instance too: both price the copies
  for (const s of [api, other])
    await ok(
      call(s.url, 'POST', '/market/quotes', {
        token: dealer,
        body: { ticks: [{ symbol: 'EURUSD', bid: 1.1, ask: 1.1002 }] },
      }),
    )

  const waitFor = async (sql: string, args: number[], want: number) => {
    const end = Date.now() + 60_000
    for (;;) {
      const n = Number((await db.execute({ sql, args })).rows[0]![0])
      if (n >= want) return
      if (Date.now() > end) {
        const why = await db.execute({
          sql: `select status, reason, count(*) as n from copy_links where master_ticket = ? group by status, reason`,
          args: [args[0]!],
        })
        const stuck = await db.execute({
          sql: `select l.*, o.state as follower_state, (select count(*) from trade_requests r where r.login = l.follower_login and r.idempotency_key like 'copy:%') as keys
                from copy_links l left join orders o on o.ticket = l.follower_ticket
                where l.master_ticket = ? and l.status in ('pending', 'opening', 'closing') limit 3`,
          args: [args[0]!],
        })
        console.error(JSON.stringify(stuck.rows), Date.now())
        const skips = await db.execute({
          sql: `select action, reason, message, count(*) as n from copy_records where master_ticket = ? and result = 'skipped' group by action, reason`,
          args: [args[0]!],
        })
        throw new Error(
          `timed out: ${sql} ${args} ${n}/${want}\n${JSON.stringify(why.rows)}\n${JSON.stringify(skips.rows)}`,
        )
      }
      await Bun.sleep(3)
    }
  }
  const waitIdle = async () => {
    const end = Date.now() + 120_000
    while (
      Number((await db.execute('select count(*) from outbox where dispatched_at is null')).rows[0]![0]) > 0
    ) {
      if (Date.now() > end) throw new Error('the outbox did not drain')
      await Bun.sleep(5)
    }
  }
  /** One master round trip: open (its request latency), every copy committed, close, every copy closed. */
  let pauseMs = PAUSE_MS
  const roundTrip = async (followers: number) => {
    // the master trades at a human pace: what the last trade's copies caused has been delivered
    await waitIdle()
    await Bun.sleep(pauseMs)
    const t0 = performance.now()
    const o = await ok(
      call(api.url, 'POST', '/trade/open', {
        token: masterUser,
        body: { login: 100004, cmd: 0, volume: 1, symbol: 'EURUSD', sl: 0, tp: 0 },
      }),
    )
    const openMs = performance.now() - t0
    const ticket = o.order as number
    let fanout = 0
    if (followers > 0) {
      await waitFor(
        `select count(*) from copy_records where master_ticket = ? and action = 'open'`,
        [ticket],
        followers,
      )
      const r = (
        await db.execute({
          sql: `select (select open_time from orders where ticket = ?) as fill, max(follower_time) as last,
                       sum(result = 'skipped') as skipped
                from copy_records where master_ticket = ? and action = 'open'`,
          args: [ticket, ticket],
        })
      ).rows[0]!
      if (Number(r.skipped) > 0) throw new Error(`${r.skipped} copies skipped`)
      fanout = Number(r.last) - Number(r.fill)
    }
    await ok(call(api.url, 'DELETE', '/trade/close', { token: masterUser, body: { order: ticket } }))
    let closeFanout = 0
    if (followers > 0) {
      await waitFor(
        `select count(*) from copy_links where master_ticket = ? and status = 'closed'`,
        [ticket],
        followers,
      )
      const r = (
        await db.execute({
          sql: `select (select close_time from orders where ticket = ?) as fill, max(follower_time) as last
                from copy_records where master_ticket = ? and action = 'close'`,
          args: [ticket, ticket],
        })
      ).rows[0]!
      closeFanout = Number(r.last) - Number(r.fill)
    }
    return { openMs, fanout, closeFanout }
  }

  const baseline: number[] = []
  for (let i = 0; i < BASELINE; i++) baseline.push((await roundTrip(0)).openMs)

  // followers: demo accounts of the demo customer, each copying 0.01 lot (FIXED)
  let made = 0
  const addFollowers = async (n: number) => {
    const logins: number[] = []
    const one = async () => {
      const a = await ok(
        call(api.url, 'POST', '/manager/accounts', {
          token: manager,
          body: { group: 'demo\\USD', password: 'bench-pass-1', customer_id: customerId },
        }),
      )
      logins.push(a.login)
    }
    for (let i = 0; i < n; i += 8) await Promise.all(Array.from({ length: Math.min(8, n - i) }, one))
    for (const login of logins) {
      await ok(
        call(api.url, 'POST', '/copytrade/follower', {
          token: demo,
          body: { login, defaults: { volume_mode: 0, volume_param: 1 } },
        }),
      )
      await ok(
        call(api.url, 'POST', '/copytrade/subscription', {
          token: demo,
          body: { follower_login: login, master_id: masterId, policy_version: policyVersion },
        }),
      )
    }
    made += n
  }
  const out: Record<number, number[]> = {}
  let withThousand: number[] = []
  for (const size of [1, 100, 1000]) {
    await addFollowers(size - made)
    const fan: number[] = []
    const closes: number[] = []
    const opens: number[] = []
    for (let i = 0; i < TRADES[size]!; i++) {
      const r = await roundTrip(size)
      fan.push(r.fanout)
      closes.push(r.closeFanout)
      opens.push(r.openMs)
    }
    out[size] = fan
    if (size === 1000) {
      withThousand = opens
      // and back to back: the next order as soon as the last one's copies are delivered
      pauseMs = 0
      const rushed: number[] = []
      for (let i = 0; i < TRADES[size]!; i++) rushed.push((await roundTrip(size)).openMs)
      pauseMs = PAUSE_MS
      console.log(`[${label}] master /trade/open back to back with 1,000 followers: ${fmt(rushed)}`)
    }
    console.log(`[${label}] ${size} follower(s): master fill -> last follower fill ${fmt(fan)}`)
    console.log(`[${label}] ${size} follower(s): master close -> last follower close ${fmt(closes)}`)
  }
  // the same database, every subscription ended: the master's opens with no follower again
  const subs: { id: number }[] = []
  for (let before = 0; ; ) {
    const page = await ok(
      call(api.url, 'GET', `/copytrade/subscriptions?limit=500${before ? `&before=${before}` : ''}`, {
        token: demo,
      }),
    )
    subs.push(...(page.rows as { id: number }[]))
    before = page.next_before
    if (!before) break
  }
  for (const s of subs) await ok(call(api.url, 'DELETE', `/copytrade/subscription/${s.id}`, { token: demo }))
  const after: number[] = []
  for (let i = 0; i < BASELINE; i++) after.push((await roundTrip(0)).openMs)
  console.log(`[${label}] master /trade/open with no follower, after: ${fmt(after)}`)
  const ratio = pct(baseline, 50) / pct(withThousand, 50)
  console.log(
    `[${label}] master /trade/open: none ${fmt(baseline)}; 1,000 followers ${fmt(withThousand)}; ratio ${ratio.toFixed(2)}`,
  )
  db.close()
  return { out, ratio }
}

const started: { stop(): Promise<void> }[] = []
/** The servers' directories: a run leaves a few hundred MB of database there. */
const dirs: { remove(): void }[] = []
try {
  const home = serverDir()
  dirs.push(home)
  const one = await startRealServer(home.dir, {
    LOG_LEVEL: 'warn',
    SIGNIN_MAX_FAILURES_PER_IP: '100000',
    ACCOUNT_OPEN_MAX_PER_DAY: '100000',
  })
  started.push(one)
  if (process.env.EMBEDDED !== '0') await scenario('embedded', one, one, `file:${join(home.dir, 'app.db')}`)
  await one.stop()
  if (process.env.DISTRIBUTED !== '0') {
    const [sqld, redis] = await Promise.all([startSqld(), startRedis()])
    started.push(sqld, redis)
    const env = (role: string) => ({
      // Hrana over WebSockets, as docs/operations.md recommends for Bun instances (ADR 0019)
      DATABASE_URL: sqld.url.replace(/^http/, 'ws'),
      REDIS_URL: redis.url,
      ROLE: role,
      LOG_LEVEL: 'warn',
      SIGNIN_MAX_FAILURES_PER_IP: '100000',
      ACCOUNT_OPEN_MAX_PER_DAY: '100000',
    })
    const dir = serverDir()
    dirs.push(dir)
    const engine = await startRealServer(dir.dir, env('engine'))
    started.push(engine)
    await engine.waitForOutput(/engine role taken/)
    const a = await startRealServer(dir.dir, env('api'))
    started.push(a)
    const b = await startRealServer(dir.dir, env('api'))
    started.push(b)
    await scenario('2 api + engine, sqld + Redis', a, b, sqld.url)
  }
} catch (e) {
  // the servers' logs, for what went wrong
  for (const [i, s] of started.entries())
    if ('output' in s) await Bun.write(`/tmp/bench-copytrade-server-${i}.log`, (s as RealServer).output())
  throw e
} finally {
  for (const s of started.reverse()) await s.stop().catch(() => {})
  for (const d of dirs) d.remove()
}
