// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
// DELETE /trade/close/group of many positions (probe of the edge): without group commit, as a Worker runs,
// every position's close was its own write transaction, all at once; the database refused many of them and
// the refusals were counted as skipped positions (200, about half left open). Only a close check's refusal
// is a skip (spec 4.7); a fault answers 503 after the positions closed before it, which stay closed.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { ManualClock } from '../../src/kernel/clock'
import { MarketPort } from '../../src/modules/market'
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
  const ingest = quoteIngest(
    () => t,
    clock,
    () => dealer,
  )
  await ingest([{ symbol: 'EURUSD', bid: 1.1, ask: 1.1001 }])
  return { t, user, ingest }
}

type Transaction = (...args: unknown[]) => Promise<unknown>
/** Runs `around` about every write transaction of the app's database (a stand-in for the edge's sqld). */
function aroundTransactions(t: TestApp, around: (run: () => Promise<unknown>) => Promise<unknown>) {
  const db = t.ctx.db as unknown as { transaction: Transaction }
  const transaction = db.transaction
  db.transaction = (...args) => around(() => transaction.apply(db, args))
  return () => {
    db.transaction = transaction
  }
}

const closedRows = (t: TestApp, tickets: number[]) =>
  t.ctx.db.all<{ ticket: number; close_price: number; close_time: number; state: string }>(
    sql.raw(
      `SELECT ticket, close_price, close_time, state FROM orders WHERE ticket IN (${tickets.join(',')}) ORDER BY ticket`,
    ),
  )

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
  let ingest: Awaited<ReturnType<typeof start>>['ingest']
  beforeAll(async () => {
    ;({ t, user, ingest } = await start({ GROUP_COMMIT: '0' }))
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
      // the answer says how far it came
      expect(r.json?.message).toBe(
        'database busy after closing 100 of 250 positions; retry to close the rest',
      )
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

  test('a later transaction of a large group closes at the quote of its own time, read again, not at the one read when the request began', async () => {
    const tickets = (await openMany(t, user, 250)).sort((a, b) => a - b)
    // the first transaction takes a second (the clock moves on), and the market moves meanwhile
    let first = true
    const restore = aroundTransactions(t, async (run) => {
      const done = await run()
      if (first) {
        first = false
        await ingest([{ symbol: 'EURUSD', bid: 1.2, ask: 1.2001 }])
      }
      return done
    })
    try {
      const r = await t.request('DELETE', '/trade/close/group', {
        token: user,
        body: { login: 100001, type: 0 },
      })
      expect([r.status, r.json?.closed]).toEqual([200, 250])
    } finally {
      restore()
    }
    const rows = await closedRows(t, tickets)
    // BUY positions close at the bid: the first hundred at the first quote, the rest at the new one
    expect(rows.map((o) => o.close_price)).toEqual([...Array(100).fill(1.1), ...Array(150).fill(1.2)])
    expect(rows[100]!.close_time).toBeGreaterThan(rows[0]!.close_time)
  }, 120_000)

  test('a transaction whose outcome is unknown (an error after it may have committed) still drops the cached positions and account', async () => {
    const tickets = (await openMany(t, user, 5)).sort((a, b) => a - b)
    // read (and cached) before the close
    expect(await openTickets(t, user)).toEqual(tickets)
    const before = (await t.request('GET', '/account/me?login=100001', { token: user })).json
    let armed = true
    const restore = aroundTransactions(t, async (run) => {
      const done = await run()
      if (armed) {
        armed = false
        // committed, but the answer to COMMIT was lost on the way
        throw new Error('fetch failed: ECONNRESET')
      }
      return done
    })
    try {
      const r = await t.request('DELETE', '/trade/close/group', {
        token: user,
        body: { login: 100001, type: 0 },
      })
      expect([r.status, r.json?.error]).toEqual([503, 'SERVICE_UNAVAILABLE'])
    } finally {
      restore()
    }
    expect((await closedRows(t, tickets)).map((o) => o.state)).toEqual(Array(5).fill('closed'))
    // the list and the account read the database again: the positions are gone, so is their margin
    expect(await openTickets(t, user)).toEqual([])
    const after = (await t.request('GET', '/account/me?login=100001', { token: user })).json
    expect(before?.margin).toBeGreaterThan(0)
    expect(after?.margin).toBe(0)
  }, 120_000)

  test("a conversion rate missing when the closes are written is a skip, as the close check's: 200, the other positions closed", async () => {
    await ingest([
      { symbol: 'EURJPY', bid: 162.2, ask: 162.22 },
      { symbol: 'USDJPY', bid: 149.5, ask: 149.52 },
      { symbol: 'EURUSD', bid: 1.2, ask: 1.2001 },
    ])
    const jpy = await t.request('POST', '/trade/open', {
      token: user,
      body: { login: 100001, cmd: 0, volume: 1, symbol: 'EURJPY', sl: 0, tp: 0 },
    })
    expect(jpy.status).toBe(200)
    const others = await openMany(t, user, 3)
    // the JPY pairs' quotes are gone while the write transaction runs (they were there for the check)
    const quotes = t.ports.get(MarketPort).quotes
    const peek = quotes.peek.bind(quotes)
    let writing = false
    quotes.peek = (s: string) =>
      (writing && s.includes('JPY') ? undefined : peek(s)) as ReturnType<typeof peek>
    const restore = aroundTransactions(t, async (run) => {
      writing = true
      try {
        return await run()
      } finally {
        writing = false
      }
    })
    try {
      const r = await t.request('DELETE', '/trade/close/group', {
        token: user,
        body: { login: 100001, type: 0 },
      })
      expect([r.status, r.json?.closed]).toEqual([200, 3])
      // a single close refuses it as its check would
      const one = await t.request('DELETE', '/trade/close', { token: user, body: { order: jpy.json.order } })
      expect([one.status, one.json?.error, one.json?.message]).toEqual([
        500,
        'TRADE_ERROR',
        'no conversion rate for EURJPY into USD',
      ])
    } finally {
      restore()
      quotes.peek = peek
    }
    expect(await openTickets(t, user)).toEqual([jpy.json.order])
    expect((await closedRows(t, others)).map((o) => o.state)).toEqual(Array(3).fill('closed'))
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
