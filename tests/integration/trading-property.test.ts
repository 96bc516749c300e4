// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { eq, sql, sum } from 'drizzle-orm'
import fc from 'fast-check'
import { ManualClock } from '../../src/kernel/clock'
import { outbox } from '../../src/kernel/events/schema'
import { AccountsPort } from '../../src/modules/accounts'
import { accounts, balanceOperations } from '../../src/modules/accounts/schema'
import { fundsOf, holdingsOf } from '../../src/modules/trading/book/holdings-table'
import { orders } from '../../src/modules/trading/schema'
import { makeTestApp, type TestApp } from '../support/app'

const clock = new ManualClock(Date.UTC(2026, 0, 6, 10, 0, 0))
let t: TestApp
let user: string
let dealer: string
let mid = 1.1

const command = fc.oneof(
  fc.record({
    kind: fc.constant('open' as const),
    cmd: fc.integer({ min: 0, max: 5 }),
    volume: fc.integer({ min: 1, max: 50 }),
    sl: fc.integer({ min: -60, max: 60 }),
    tp: fc.integer({ min: -60, max: 60 }),
    at: fc.integer({ min: -40, max: 40 }),
  }),
  fc.record({ kind: fc.constant('tick' as const), move: fc.integer({ min: -50, max: 50 }) }),
  fc.record({ kind: fc.constant('close' as const), pick: fc.nat(), part: fc.boolean() }),
  fc.record({
    kind: fc.constant('modify' as const),
    pick: fc.nat(),
    sl: fc.integer({ min: -60, max: 60 }),
    tp: fc.integer({ min: -60, max: 60 }),
  }),
)
const pip = 0.0001
const lvl = (x: number) => (x === 0 ? 0 : Math.max(0, Math.round((mid + x * pip) * 1e5) / 1e5))

async function tick(move: number) {
  mid = Math.max(0.5, mid + move * pip)
  clock.advance(1000)
  const bid = Math.round(mid * 1e5) / 1e5
  const r = await t.request('POST', '/market/quotes', {
    token: dealer,
    body: { ticks: [{ symbol: 'EURUSD', bid, ask: Math.round((bid + 0.0001) * 1e5) / 1e5 }] },
  })
  expect(r.status).toBe(200)
}

beforeAll(async () => {
  t = await makeTestApp({ clock })
  user = await t.userToken()
  dealer = await t.staffToken(3, 'dealer-pass-1')
  await tick(0)
})
afterAll(() => t.close())

test('random opens, partial closes, closes, modifications and ticks keep the ledger, equity and triggers consistent', async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(command, { minLength: 1, maxLength: 14 }), async (cmds) => {
      for (const c of cmds) {
        if (c.kind === 'tick') await tick(c.move)
        else if (c.kind === 'open') {
          const r = await t.request('POST', '/trade/open', {
            token: user,
            body: {
              login: 100001,
              cmd: c.cmd,
              volume: c.volume,
              symbol: 'EURUSD',
              sl: lvl(c.sl),
              tp: lvl(c.tp),
              open_price: c.cmd >= 2 ? lvl(c.at || 1) : undefined,
            },
          })
          expect([200, 400, 500]).toContain(r.status)
        } else {
          const active = await t.ctx.db.select().from(orders).where(eq(orders.login, 100001))
          const open = active.filter((o) => o.state === 'open')
          if (open.length === 0) continue
          const o = open[c.pick % open.length]
          if (c.kind === 'close') {
            const volume = c.part && o.volume > 1 ? Math.floor(o.volume / 2) : undefined
            const r = await t.request('DELETE', '/trade/close', {
              token: user,
              body: { order: o.ticket, volume },
            })
            expect(r.status).toBe(200)
          } else {
            const r = await t.request('PUT', '/trade/modify', {
              token: user,
              body: { order: o.ticket, sl: lvl(c.sl), tp: lvl(c.tp) },
            })
            expect([200, 500]).toContain(r.status)
          }
        }
      }
      // balance = sum of ledger rows
      const [l] = await t.ctx.db
        .select({ s: sum(balanceOperations.amount) })
        .from(balanceOperations)
        .where(eq(balanceOperations.login, 100001))
      const [a] = await t.ctx.db.select().from(accounts).where(eq(accounts.login, 100001))
      expect(Number(l.s)).toBe(a.balance)
      // equity = balance + credit + floating profit (+ swap and commission of open positions)
      const bal = await t.request('GET', '/balance/me?login=100001', { token: user })
      expect(bal.json.balance).toBe(a.balance / 100)
      expect(bal.json.equity).toBeCloseTo(
        bal.json.balance + bal.json.credit + bal.json.profit + bal.json.commission + bal.json.storage,
        1,
      )
      // the holdings kept with every position change equal the open positions aggregated
      const kept = await t.ctx.db.all<{ k: string }>(
        sql`select symbol || ':' || cmd || ':' || volume || ':' || round(volume_price, 6) || ':' || commission || ':' || storage as k
            from holdings where login = 100001 and volume > 0 order by symbol, cmd`,
      )
      const derived = await t.ctx.db.all<{ k: string }>(
        sql`select symbol || ':' || (cmd % 2) || ':' || sum(volume) || ':' || round(sum(volume * open_price), 6) || ':' || sum(commission) || ':' || sum(storage) as k
            from orders where login = 100001 and state = 'open' group by symbol, cmd % 2 order by symbol, cmd % 2`,
      )
      expect(kept.map((r) => r.k)).toEqual(derived.map((r) => r.k))
      // the margin check's one-statement read (rows as JSON) gives the holdings bit for bit
      const funds = (await fundsOf(t.ports.get(AccountsPort), t.ctx.db, [100001])).get(100001)
      expect(funds?.balance).toBe(a.balance)
      expect(funds?.holdings).toEqual((await holdingsOf(t.ctx.db, [100001])).get(100001) ?? [])
      // no trigger fired twice: at most one closing event per ticket, one activation per ticket
      const events = await t.ctx.db.select().from(outbox)
      const seen = new Map<string, number>()
      for (const e of events) {
        if (!/trade\.(closed|stopped_out|activated)/.test(e.topic)) continue
        const k = `${e.topic === 'trade.activated' ? 'a' : 'c'}:${JSON.parse(e.payload).ticket}`
        seen.set(k, (seen.get(k) ?? 0) + 1)
      }
      for (const n of seen.values()) expect(n).toBe(1)
    }),
    { numRuns: 25 },
  )
}, 120_000)
