// Copy trading on two API instances and two engine candidates sharing a real sqld and redis-server
// (issue 31): the instance executing a master's fan-out is killed (SIGKILL) in the middle of it; the
// others finish it. Every follower gets exactly one copy: none missed, none doubled.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { createClient } from '@libsql/client'
import { type RedisServer, startRedis } from '../support/redis'
import { call, type RealServer, serverDir, signIn, startRealServer } from '../support/server'
import { type SqldServer, startSqld } from '../support/sqld'

const FOLLOWERS = 120
let sqld: SqldServer
let redis: RedisServer
const home = serverDir()
const servers: RealServer[] = []
let db: ReturnType<typeof createClient>

const originOf = (s: RealServer) => /READY \S+ (\S+)/.exec(s.output())![1]!
const alive = () => servers.filter((s) => s.alive())
const api = () => alive()[0]!.url
const count = async (q: string, args: (number | string)[] = []) =>
  Number((await db.execute({ sql: q, args })).rows[0]![0])

beforeAll(async () => {
  ;[sqld, redis] = await Promise.all([startSqld(), startRedis()])
  const env = (role: string) => ({
    DATABASE_URL: sqld.url,
    REDIS_URL: redis.url,
    ROLE: role,
    ACCOUNT_OPEN_MAX_PER_DAY: '100000',
  })
  const engine = await startRealServer(home.dir, env('engine'))
  servers.push(engine)
  await engine.waitForOutput(/engine role taken/)
  servers.push(
    ...(await Promise.all([
      startRealServer(home.dir, env('engine')),
      startRealServer(home.dir, env('api')),
      startRealServer(home.dir, env('api')),
    ])),
  )
  db = createClient({ url: sqld.url, intMode: 'number' })
}, 120_000)

afterAll(async () => {
  db?.close()
  await Promise.all(servers.map((s) => s.stop()))
  await Promise.all([sqld?.stop(), redis?.stop()])
  home.remove()
})

test('an instance killed in the middle of a fan-out: one copy per follower, none missed, none doubled', async () => {
  const manager = await signIn(api(), '/manager/sign/in', { login: 1, password: 'manager-pass-1' })
  const dealer = await signIn(api(), '/manager/sign/in', { login: 3, password: 'dealer-pass-1' })
  const demo = await signIn(api(), '/customer/sign/in', {
    email: 'demo@example.com',
    password: 'demo-pass-1',
  })
  const master = await signIn(api(), '/sign/in', { login: 100004, password: 'master-pass-1' })
  const customerId = (await call(api(), 'GET', '/customer/me', { token: demo })).json.id
  const listed = (await call(api(), 'GET', '/copytrade/masters', { token: demo })).json.rows[0]
  const masterId = listed.id
  const policyVersion = listed.policy_version
  const logins: number[] = []
  for (let i = 0; i < FOLLOWERS; i += 6)
    await Promise.all(
      Array.from({ length: 6 }, async () => {
        const a = await call(api(), 'POST', '/manager/accounts', {
          token: manager,
          body: { group: 'demo\\USD', password: 'copy-pass-1', customer_id: customerId },
        })
        expect(a.status).toBe(200)
        logins.push(a.json.login)
      }),
    )
  for (const [i, login] of logins.entries()) {
    const base = servers[2 + (i % 2)]!.url
    expect(
      (
        await call(base, 'POST', '/copytrade/follower', {
          token: demo,
          body: { login, defaults: { volume_mode: 0, volume_param: 1 } },
        })
      ).status,
    ).toBe(200)
    expect(
      (
        await call(base, 'POST', '/copytrade/subscription', {
          token: demo,
          body: { follower_login: login, master_id: masterId, policy_version: policyVersion },
        })
      ).status,
    ).toBe(200)
  }
  for (const s of servers)
    expect(
      (
        await call(s.url, 'POST', '/market/quotes', {
          token: dealer,
          body: { ticks: [{ symbol: 'EURUSD', bid: 1.1, ask: 1.1002 }] },
        })
      ).status,
    ).toBe(200)

  // the master trades until a kill lands while links of its fan-out are claimed but not all recorded
  let ticket = 0
  let killed: RealServer | undefined
  for (let attempt = 0; attempt < 5 && !killed; attempt++) {
    const o = await call(api(), 'POST', '/trade/open', {
      token: master,
      body: { login: 100004, cmd: 0, volume: 1, symbol: 'EURUSD', sl: 0, tp: 0 },
    })
    expect(o.status).toBe(200)
    ticket = o.json.order
    const end = Date.now() + 10_000
    while (Date.now() < end) {
      const rows = (
        await db.execute({
          sql: `select origin, count(*) as n from orders where comment = ? and actor like 'copy:%' group by origin`,
          args: [`copy #${ticket}`],
        })
      ).rows
      const open = await count(
        `select count(*) from copy_links where master_ticket = ? and status = 'open'`,
        [ticket],
      )
      if (rows.length > 0) {
        if (open < FOLLOWERS) {
          killed = servers.find((s) => originOf(s) === rows[0]!.origin)
          await killed?.kill()
        }
        break
      }
      await Bun.sleep(1)
    }
    if (!killed) {
      // the fan-out finished before the kill: close and try again
      await call(api(), 'DELETE', '/trade/close', { token: master, body: { order: ticket } })
      const until = Date.now() + 20_000
      while (
        (await count(`select count(*) from copy_links where master_ticket = ? and status = 'closed'`, [
          ticket,
        ])) < FOLLOWERS &&
        Date.now() < until
      )
        await Bun.sleep(50)
    }
  }
  expect(killed).toBeDefined()
  // the survivors finish: the links' lease (15 s) lapses and the reconcile job (5 s) takes them over
  const until = Date.now() + 60_000
  while (
    (await count(`select count(*) from copy_links where master_ticket = ? and status = 'open'`, [ticket])) <
      FOLLOWERS &&
    Date.now() < until
  )
    await Bun.sleep(200)
  expect(
    await count(`select count(*) from copy_links where master_ticket = ? and status = 'open'`, [ticket]),
  ).toBe(FOLLOWERS)
  // exactly one follower position per subscription, each the one its link names
  const copies = (
    await db.execute({
      sql: `select login, count(*) as n from orders where comment = ? and actor like 'copy:%' and parent is null group by login`,
      args: [`copy #${ticket}`],
    })
  ).rows
  expect(copies).toHaveLength(FOLLOWERS)
  expect(copies.every((r) => Number(r.n) === 1)).toBe(true)
  expect(
    await count(
      `select count(*) from copy_links l join orders o on o.ticket = l.follower_ticket
       where l.master_ticket = ? and o.state = 'open' and o.login = l.follower_login`,
      [ticket],
    ),
  ).toBe(FOLLOWERS)
  expect(
    await count(`select count(*) from copy_records where master_ticket = ? and action = 'open'`, [ticket]),
  ).toBe(FOLLOWERS)
  // and the master's close reaches every copy through the survivors
  expect(
    (await call(api(), 'DELETE', '/trade/close', { token: master, body: { order: ticket } })).status,
  ).toBe(200)
  const closed = Date.now() + 30_000
  while (
    (await count(`select count(*) from copy_links where master_ticket = ? and status = 'closed'`, [ticket])) <
      FOLLOWERS &&
    Date.now() < closed
  )
    await Bun.sleep(100)
  expect(
    await count(`select count(*) from orders where comment = ? and state = 'open'`, [`copy #${ticket}`]),
  ).toBe(0)
  for (const s of alive()) expect(s.output()).not.toContain('unhandled rejection')
}, 240_000)
