// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
// Findings of the scale-out fault probe (.tmp/probe-scalefaults: sqld paused under trade opens): opens
// queued in the group commit while the database did not answer waited 14-22 s, then filled at the price
// of when they were sent (BUYs at 43030 with the market at 45030 for 13 s). Now an open waits at most
// DATABASE_WRITE_TIMEOUT_MS for its transaction (503, nothing written; docs/operations.md Faults, ADR
// 0019), and a market open whose price is over 3 s old when its batch is written is refused 503
// PRICE_STALE (ADR 0014 §3).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { ManualClock } from '../../src/kernel/clock'
import { GroupCommit } from '../../src/kernel/db/group-commit'
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
