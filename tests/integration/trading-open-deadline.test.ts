// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
// Findings of the scale-out fault probe (.tmp/probe-scalefaults: sqld paused under trade opens): opens
// queued in the group commit while the database did not answer waited 14-22 s, then filled at the price
// of when they were sent (BUYs at 43030 with the market at 45030 for 13 s). Now an open waits at most
// DATABASE_WRITE_TIMEOUT_MS for its transaction (503, nothing written; docs/operations.md Faults, ADR
// 0019), and a market open whose price is over 3 s old when its batch is written is refused 503
// PRICE_STALE (ADR 0014 §3). Review of that change (.tmp/review-gc): the age is measured after the batch's
// reads (a slow read mid-transaction aged the price too), closes of every kind have the same guard, and the
// close committer waits DATABASE_WRITE_TIMEOUT_MS as the open committer does.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { ManualClock } from '../../src/kernel/clock'
import type { Db } from '../../src/kernel/db/client'
import { GroupCommit } from '../../src/kernel/db/group-commit'
import type { CloseRequest } from '../../src/modules/trading/commit/close-commit'
import type { OpenRequest } from '../../src/modules/trading/commit/open-commit'
import { orders } from '../../src/modules/trading/schema'
import { makeTestApp, type TestApp } from '../support/app'
import { quoteIngest } from '../support/quotes'

const WRITE_TIMEOUT_MS = 800
const LOGIN = 100001
// Monday 2026-01-05 15:00 UTC
const clock = new ManualClock(Date.UTC(2026, 0, 5, 15, 0, 0))
let t: TestApp
let user: string
let dealer: string
const ingest = quoteIngest(
  () => t,
  clock,
  () => dealer,
)
const open = (body: Record<string, unknown>) =>
  t.request('POST', '/trade/open', {
    token: user,
    body: { login: LOGIN, cmd: 0, volume: 1, symbol: 'BTCUSD', sl: 0, tp: 0, ...body },
  })
const withComment = async (comment: string) =>
  (await t.ctx.db.select().from(orders).where(eq(orders.comment, comment))).filter((o) => o.login === LOGIN)

beforeAll(async () => {
  t = await makeTestApp({ clock, env: { DATABASE_WRITE_TIMEOUT_MS: String(WRITE_TIMEOUT_MS) } })
  user = await t.userToken(LOGIN)
  dealer = await t.staffToken(3, 'dealer-pass-1')
  await ingest([{ symbol: 'BTCUSD', bid: 43000, ask: 43030 }])
  // warm what an open reads
  expect((await open({ comment: 'warm' })).status).toBe(200)
})
afterAll(() => t.close())

/** Every write transaction of the process waits until `resume` (the database paused). */
function pauseWrites() {
  const db = t.ctx.db
  let resume!: () => void
  const resumed = new Promise<void>((r) => {
    resume = r
  })
  const transaction = db.transaction
  db.transaction = ((fn, order) =>
    resumed.then(() => transaction.call(db, fn, order))) as typeof db.transaction
  return () => {
    db.transaction = transaction
    resume()
  }
}

describe('opens while the database does not answer', () => {
  test('the open in progress and those queued behind it answer 503 within DATABASE_WRITE_TIMEOUT_MS; none fills later', async () => {
    const resume = pauseWrites()
    try {
      const t0 = performance.now()
      const answered: { status: number; error?: string; retryAfter: string | null; ms: number }[] = []
      const send = () =>
        open({ comment: 'paused-db' }).then((r) =>
          answered.push({
            status: r.status,
            error: r.json?.error,
            retryAfter: r.headers.get('retry-after'),
            ms: performance.now() - t0,
          }),
        )
      const all = [send()]
      await Bun.sleep(100)
      all.push(send(), send(), send())
      // well past the bound of the last one sent
      await Bun.sleep(100 + WRITE_TIMEOUT_MS + 400)
      expect(answered).toHaveLength(4)
      for (const a of answered) {
        expect([a.status, a.error]).toEqual([503, 'SERVICE_UNAVAILABLE'])
        expect(a.retryAfter).not.toBeNull()
        expect(a.ms).toBeLessThan(100 + WRITE_TIMEOUT_MS + 300)
      }
      // the database answers again: the batch that waited for its turn writes none of them
      resume()
      await Promise.all(all)
      await Bun.sleep(50)
      await t.settle()
      expect(await withComment('paused-db')).toEqual([])
    } finally {
      resume()
    }
    // and opens work again
    await ingest([{ symbol: 'BTCUSD', bid: 43000, ask: 43030 }])
    expect((await open({ comment: 'after-pause' })).status).toBe(200)
  })
})

/**
 * Holds the next open whose comment is `comment` between its checks and the group commit, and runs
 * `meanwhile` there (the time it waited for the database).
 */
function holdOpen(comment: string, meanwhile: () => void | Promise<void>) {
  const original = GroupCommit.prototype.submit
  GroupCommit.prototype.submit = function (this: GroupCommit<unknown, unknown>, input: unknown) {
    if ((input as OpenRequest).values?.comment !== comment) return original.call(this, input)
    GroupCommit.prototype.submit = original
    return Promise.resolve(meanwhile()).then(() => original.call(this, input))
  }
  return () => {
    GroupCommit.prototype.submit = original
  }
}

describe('a market open whose price grew old before its batch was written', () => {
  test('over 3 s: 503 PRICE_STALE, nothing written', async () => {
    await ingest([{ symbol: 'BTCUSD', bid: 43000, ask: 43030 }])
    const release = holdOpen('stale-at-commit', () => clock.advance(3001))
    try {
      const r = await open({ comment: 'stale-at-commit' })
      expect([r.status, r.json.error]).toEqual([503, 'PRICE_STALE'])
      expect(r.json.message).toContain('nothing is filled')
    } finally {
      release()
    }
    expect(await withComment('stale-at-commit')).toEqual([])
  })

  test('within 3 s: fills at the price of its checks', async () => {
    await ingest([{ symbol: 'BTCUSD', bid: 43000, ask: 43030 }])
    const release = holdOpen('fresh-at-commit', () => clock.advance(3000))
    try {
      const r = await open({ comment: 'fresh-at-commit' })
      expect(r.status).toBe(200)
      expect(r.json.trade.open_price).toBe(43030)
    } finally {
      release()
    }
  })

  test('a pending order fills at no quote: placed however long it waited', async () => {
    await ingest([{ symbol: 'BTCUSD', bid: 43000, ask: 43030 }])
    const release = holdOpen('pending-late', () => clock.advance(10_000))
    try {
      const r = await open({ cmd: 2, open_price: 40000, comment: 'pending-late' })
      expect(r.status).toBe(200)
      expect([r.json.trade.state, r.json.trade.open_price]).toEqual(['pending', 40000])
    } finally {
      release()
    }
  })
})

describe('the age of a price is measured after the batch reads', () => {
  test('a market open whose transaction reads take > 3 s (sqld slow mid-transaction) is not filled at the old price', async () => {
    await ingest([{ symbol: 'BTCUSD', bid: 43000, ask: 43030 }])
    const db = t.ctx.db as Db
    const transaction = db.transaction
    let slowed = false
    db.transaction = ((fn, order) =>
      transaction.call(
        db,
        (tx) => {
          const readAll = tx.readAll.bind(tx)
          // the batch's first readAll (fundsOf) answers 3.5 s later: the price checked is then 3.5 s old
          tx.readAll = async (s) => {
            if (!slowed) {
              slowed = true
              clock.advance(3500)
            }
            return readAll(s)
          }
          return fn(tx)
        },
        order,
      )) as typeof db.transaction
    try {
      const r = await open({ comment: 'slow-read' })
      expect(slowed).toBe(true)
      // the open's price is 3.5 s old when it is inserted: ADR 0014 §3 / FILL_PRICE_MAX_AGE_MS
      expect([r.status, r.json?.error]).toEqual([503, 'PRICE_STALE'])
    } finally {
      db.transaction = transaction
    }
    expect(await withComment('slow-read')).toEqual([])
  })
})

/**
 * Holds the closes `which` selects between their checks and the group commit; the first one held runs
 * `meanwhile` (the time they waited for the database) before any goes on.
 */
function holdCloses(which: (r: CloseRequest) => boolean, meanwhile: () => void | Promise<void>) {
  const original = GroupCommit.prototype.submit
  let waited: Promise<void> | undefined
  GroupCommit.prototype.submit = function (this: GroupCommit<unknown, unknown>, input: unknown) {
    const r = input as CloseRequest
    if (!r.input?.order || !which(r)) return original.call(this, input)
    waited ??= Promise.resolve(meanwhile())
    return waited.then(() => original.call(this, input))
  }
  return () => {
    GroupCommit.prototype.submit = original
  }
}

const openPosition = async (comment: string, volume = 1) => {
  const o = await open({ comment, volume })
  expect(o.status).toBe(200)
  return o.json.order as number
}
const row = async (ticket: number) =>
  (await t.ctx.db.select().from(orders).where(eq(orders.ticket, ticket)))[0]!

describe('a close whose price grew old before its batch was written (ADR 0014 §3)', () => {
  test('a market close that waited 10 s for its commit does not fill at the 10 s old price', async () => {
    await ingest([{ symbol: 'BTCUSD', bid: 43000, ask: 43030 }])
    const ticket = await openPosition('to-close')
    const release = holdCloses(
      (r) => r.input.order.ticket === ticket,
      async () => {
        // the database paused 10 s; the market moved meanwhile
        clock.advance(9000)
        await t.request('POST', '/market/quotes', {
          token: dealer,
          body: { ticks: [{ symbol: 'BTCUSD', bid: 45000, ask: 45030 }] },
        })
        clock.advance(1000)
      },
    )
    try {
      const r = await t.request('DELETE', '/trade/close', { token: user, body: { order: ticket } })
      const o = await row(ticket)
      // not closed at 43000 while the market is at 45000, 10 s later
      expect({ status: r.status, error: r.json?.error, closePrice: o.closePrice, state: o.state }).toEqual({
        status: 503,
        error: 'PRICE_STALE',
        closePrice: 0,
        state: 'open',
      })
      expect(r.json.message).toContain('nothing is filled')
    } finally {
      release()
    }
    // retried at a current price, it closes there
    await ingest([{ symbol: 'BTCUSD', bid: 45000, ask: 45030 }])
    const again = await t.request('DELETE', '/trade/close', { token: user, body: { order: ticket } })
    expect(again.status).toBe(200)
    expect([(await row(ticket)).state, (await row(ticket)).closePrice]).toEqual(['closed', 45000])
  })

  test('within 3 s: a close fills at the price of its checks', async () => {
    await ingest([{ symbol: 'BTCUSD', bid: 43000, ask: 43030 }])
    const ticket = await openPosition('close-fresh')
    const release = holdCloses(
      (r) => r.input.order.ticket === ticket,
      () => clock.advance(3000),
    )
    try {
      const r = await t.request('DELETE', '/trade/close', { token: user, body: { order: ticket } })
      expect(r.status).toBe(200)
    } finally {
      release()
    }
    expect([(await row(ticket)).state, (await row(ticket)).closePrice]).toEqual(['closed', 43000])
  })

  test('a partial close over 3 s old: 503 PRICE_STALE, the position keeps its volume', async () => {
    await ingest([{ symbol: 'BTCUSD', bid: 43000, ask: 43030 }])
    const ticket = await openPosition('partial-stale', 2)
    const release = holdCloses(
      (r) => r.input.order.ticket === ticket,
      () => clock.advance(3001),
    )
    try {
      const r = await t.request('DELETE', '/trade/close', { token: user, body: { order: ticket, volume: 1 } })
      expect([r.status, r.json?.error]).toEqual([503, 'PRICE_STALE'])
    } finally {
      release()
    }
    const o = await row(ticket)
    expect([o.state, o.volume]).toEqual(['open', 2])
  })

  test('a group close whose closes waited over 3 s: 503 PRICE_STALE saying none was closed, all stay open', async () => {
    await ingest([{ symbol: 'BTCUSD', bid: 43000, ask: 43030 }])
    await openPosition('group-stale-1')
    await openPosition('group-stale-2')
    const before = (await t.ctx.db.select().from(orders).where(eq(orders.login, LOGIN))).filter(
      (o) => o.state === 'open',
    )
    const release = holdCloses(
      (r) => r.input.reason === 'group_close',
      () => clock.advance(3001),
    )
    try {
      const r = await t.request('DELETE', '/trade/close/group', {
        token: user,
        body: { login: LOGIN, type: 0 },
      })
      // a batch waiting for current prices is no skip (not 200 with closed 0)
      expect([r.status, r.json?.error]).toEqual([503, 'PRICE_STALE'])
      expect(r.json.message).toContain(`after closing 0 of ${before.length} positions`)
    } finally {
      release()
    }
    const after = (await t.ctx.db.select().from(orders).where(eq(orders.login, LOGIN))).filter(
      (o) => o.state === 'open',
    )
    expect(after.map((o) => o.ticket).sort()).toEqual(before.map((o) => o.ticket).sort())
    // sent again at current prices, it closes them all
    await ingest([{ symbol: 'BTCUSD', bid: 43000, ask: 43030 }])
    const again = await t.request('DELETE', '/trade/close/group', {
      token: user,
      body: { login: LOGIN, type: 0 },
    })
    expect([again.status, again.json.closed]).toEqual([200, before.length])
  })
})

test('the close committer waits DATABASE_WRITE_TIMEOUT_MS, as the open committer does', async () => {
  await ingest([{ symbol: 'BTCUSD', bid: 43000, ask: 43030 }])
  const ticket = await openPosition('to-close-2')
  const waits: Record<string, number> = {}
  const original = GroupCommit.prototype.submit
  GroupCommit.prototype.submit = function (this: GroupCommit<unknown, unknown>, input: unknown) {
    const kind = (input as { values?: unknown }).values ? 'open' : 'close'
    waits[kind] = (this as unknown as { waitMs: number }).waitMs
    return original.call(this, input)
  }
  try {
    expect((await open({ comment: 'probe' })).status).toBe(200)
    expect((await t.request('DELETE', '/trade/close', { token: user, body: { order: ticket } })).status).toBe(
      200,
    )
  } finally {
    GroupCommit.prototype.submit = original
  }
  expect(waits).toEqual({ open: WRITE_TIMEOUT_MS, close: WRITE_TIMEOUT_MS })
})
