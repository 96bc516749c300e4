// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
// DELETE /trade/close/group of many positions (probe of the edge): without group commit, as a Worker runs,
// every position's close was its own write transaction, all at once; the database refused many of them and
// the refusals were counted as skipped positions (200, about half left open). Only a close check's refusal
// is a skip (spec 4.7); a fault answers 503 after the positions closed before it, which stay closed.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { ManualClock } from '../../src/kernel/clock'
import { makeTestApp, type TestApp } from '../support/app'
import { quoteIngest } from '../support/quotes'

// Monday 2026-01-05 15:00 UTC: forex trades
const clock = new ManualClock(Date.UTC(2026, 0, 5, 15, 0, 0))
const POSITIONS = 300

/** An app (GROUP_COMMIT 0: as at the edge, every request writes its own transactions) and its demo user. */
async function start(env: Record<string, string>) {
  const t = await makeTestApp({ clock, env })
  const user = await t.userToken()
  const dealer = await t.staffToken(3, 'dealer-pass-1')
  await quoteIngest(
    () => t,
    clock,
    () => dealer,
  )([{ symbol: 'EURUSD', bid: 1.1, ask: 1.1001 }])
  return { t, user }
}

/** `n` small EURUSD positions of the demo user, opened a few at a time; their tickets. */
async function openMany(t: TestApp, user: string, n: number) {
  const tickets: number[] = []
  for (let i = 0; i < n; i += 10) {
    const rs = await Promise.all(
      Array.from({ length: Math.min(10, n - i) }, () =>
        t.request('POST', '/trade/open', {
          token: user,
          body: { login: 100001, cmd: 0, volume: 1, symbol: 'EURUSD', sl: 0, tp: 0 },
        }),
      ),
    )
    for (const r of rs) {
      expect(r.status).toBe(200)
      tickets.push(r.json.order)
    }
  }
  return tickets
}

const openTickets = async (t: TestApp, user: string) =>
  (
    (await t.request('GET', '/trade/list?login=100001', { token: user })).json.positions as {
      order: number
    }[]
  )
    .map((p) => p.order)
    .sort((a, b) => a - b)

/** The database fails the close of `ticket` as a busy database does (a fault, not a close check's refusal). */
const failCloseOf = (t: TestApp, ticket: number) =>
  t.ctx.db.run(
    sql.raw(
      `CREATE TRIGGER probe_fail_close BEFORE UPDATE OF state ON orders WHEN NEW.ticket = ${ticket} AND NEW.state = 'closed' BEGIN SELECT RAISE(ABORT, 'database is locked'); END`,
    ),
  )
const dropFault = (t: TestApp) => t.ctx.db.run(sql.raw('DROP TRIGGER IF EXISTS probe_fail_close'))

describe('without group commit (the edge)', () => {
  let t: TestApp
  let user: string
  beforeAll(async () => {
    ;({ t, user } = await start({ GROUP_COMMIT: '0' }))
  }, 60_000)
  afterAll(() => t.close())

  test(`DELETE /trade/close/group of ${POSITIONS} open positions closes every one of them (as Bun does)`, async () => {
    await openMany(t, user, POSITIONS)
    const r = await t.request('DELETE', '/trade/close/group', {
      token: user,
      body: { login: 100001, type: 0 },
    })
    expect([r.status, r.json?.closed, (await openTickets(t, user)).length]).toEqual([200, POSITIONS, 0])
  }, 120_000)

  test('a database fault mid-batch is no skip: 503 SERVICE_UNAVAILABLE, the positions closed before it stay closed, the rest stay open', async () => {
    const tickets = (await openMany(t, user, 250)).sort((a, b) => a - b)
    // in the second hundred: the first transaction of the batch commits, the second fails
    await failCloseOf(t, tickets[150]!)
    try {
      const r = await t.request('DELETE', '/trade/close/group', {
        token: user,
        body: { login: 100001, type: 0 },
      })
      expect([r.status, r.json?.error]).toEqual([503, 'SERVICE_UNAVAILABLE'])
      const left = await openTickets(t, user)
      expect(left).toEqual(tickets.slice(100))
    } finally {
      await dropFault(t)
    }
    // asked again, it closes what is still open
    const again = await t.request('DELETE', '/trade/close/group', {
      token: user,
      body: { login: 100001, type: 0 },
    })
    expect([again.status, again.json?.closed, (await openTickets(t, user)).length]).toEqual([200, 150, 0])
  }, 120_000)
})

describe('with group commit (a Bun server)', () => {
  let t: TestApp
  let user: string
  beforeAll(async () => {
    ;({ t, user } = await start({}))
  }, 60_000)
  afterAll(() => t.close())

  test('a database fault is no skip: 503 SERVICE_UNAVAILABLE, never 200 with the failed positions left open', async () => {
    const tickets = await openMany(t, user, 40)
    await failCloseOf(t, tickets[20]!)
    try {
      const r = await t.request('DELETE', '/trade/close/group', {
        token: user,
        body: { login: 100001, type: 0 },
      })
      expect([r.status, r.json?.error]).toEqual([503, 'SERVICE_UNAVAILABLE'])
      expect(await openTickets(t, user)).toContain(tickets[20]!)
    } finally {
      await dropFault(t)
    }
    const again = await t.request('DELETE', '/trade/close/group', {
      token: user,
      body: { login: 100001, type: 0 },
    })
    expect([again.status, (await openTickets(t, user)).length]).toEqual([200, 0])
  }, 120_000)
})
