// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { ManualClock } from '../../src/kernel/clock'
import { orders } from '../../src/modules/trading/schema'
import { makeTestApp, type TestApp } from '../support/app'
import { quoteIngest } from '../support/quotes'

// A review: closeManyTx caught every error of a one-by-one close (partial / guarded / owing swap) except busy and
// unreachable, and the transaction commits: a statement fault after the volume UPDATE (a constraint, an I/O
// error, accountNotFound from postChunk) leaves the position cut with no closed row and no ledger row.
describe('a partial close that fails after its first statement', () => {
  const LOGIN = 100001
  const clock = new ManualClock(Date.UTC(2026, 0, 5, 15, 0, 0))
  let t: TestApp
  let user: string
  let dealer: string
  const ingest = quoteIngest(
    () => t,
    clock,
    () => dealer,
  )
  beforeAll(async () => {
    t = await makeTestApp({ clock })
    user = await t.userToken(LOGIN)
    dealer = await t.staffToken(3, 'dealer-pass-1')
    await ingest([{ symbol: 'BTCUSD', bid: 43000, ask: 43030 }])
  }, 60_000)
  afterAll(() => t?.close())

  test('is not committed half-written', async () => {
    const o = await t.request('POST', '/trade/open', {
      token: user,
      body: { login: LOGIN, cmd: 0, volume: 2, symbol: 'BTCUSD', sl: 0, tp: 0, comment: 'half' },
    })
    expect(o.status).toBe(200)
    const ticket = o.json.order as number
    const client = t.ctx.db.client as unknown as { transaction: (...a: unknown[]) => Promise<unknown> }
    const begin = client.transaction
    client.transaction = async function (this: unknown, ...a: unknown[]) {
      const gtx = (await begin.apply(this, a)) as { batch: (s: unknown[]) => Promise<unknown> }
      const batch = gtx.batch.bind(gtx)
      gtx.batch = async (stmts: unknown[]) => {
        const text = stmts.map((s) => (typeof s === 'string' ? s : (s as { sql: string }).sql)).join(';')
        // the closed part's INSERT fails as a statement (not busy, not unreachable)
        if (/^insert into "orders"/i.test(text))
          throw Object.assign(new Error('SQLITE_CONSTRAINT: CHECK constraint failed'), {
            code: 'SQLITE_CONSTRAINT_CHECK',
          })
        return batch(stmts)
      }
      return gtx
    }
    let r: Awaited<ReturnType<TestApp['request']>>
    try {
      r = await t.request('DELETE', '/trade/close', { token: user, body: { order: ticket, volume: 1 } })
    } finally {
      client.transaction = begin
    }
    const all = (await t.ctx.db.select().from(orders).where(eq(orders.login, LOGIN))).filter(
      (x) => x.ticket === ticket || x.parent === ticket,
    )
    const state = all.map((x) => ({
      ticket: x.ticket === ticket ? 'pos' : 'child',
      state: x.state,
      volume: x.volume,
    }))
    expect(r.status).not.toBe(200)
    // refused: nothing written
    expect(state).toEqual([{ ticket: 'pos', state: 'open', volume: 2 }])
  }, 60_000)
})
