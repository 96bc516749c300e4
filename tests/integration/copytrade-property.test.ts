// Copy trading's invariants (issue 31) under random master trades, ticks, subscription changes and the
// followers' own closes: every open link matches an open follower position, no master position is copied
// twice into one subscription, ledger = balance for every account, accrued = settled + pending.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { eq, sql } from 'drizzle-orm'
import fc from 'fast-check'
import { ManualClock } from '../../src/kernel/clock'
import { accounts, balanceOperations } from '../../src/modules/accounts/schema'
import { copyLinks, copyRewards, copySubscriptions } from '../../src/modules/copytrade/schema'
import { orders } from '../../src/modules/trading/schema'
import { makeTestApp, type TestApp } from '../support/app'

const clock = new ManualClock(Date.UTC(2026, 0, 6, 10, 0, 0))
const FOLLOWERS = [100001, 100002, 100003]
let t: TestApp
let demo: string
let dealer: string
let masterUser: string
const users = new Map<number, string>()
const subs: number[] = []
let mid = 1.1

const command = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('open' as const),
      cmd: fc.integer({ min: 0, max: 1 }),
      volume: fc.integer({ min: 1, max: 40 }),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({ kind: fc.constant('tick' as const), move: fc.integer({ min: -40, max: 40 }) }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant('close' as const), pick: fc.nat(), part: fc.boolean() }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('own-close' as const), who: fc.nat(), pick: fc.nat() }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('change' as const),
      who: fc.nat(),
      action: fc.constantFrom('pause', 'resume', 'settings'),
      copy_mode: fc.integer({ min: 0, max: 2 }),
      volume_param: fc.constantFrom(0.5, 1, 2),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'reconcile' as const }) },
)

async function tick(move: number) {
  mid = Math.max(0.8, mid + move * 0.0001)
  clock.advance(1000)
  const bid = Math.round(mid * 1e5) / 1e5
  const r = await t.request('POST', '/market/quotes', {
    token: dealer,
    body: { ticks: [{ symbol: 'EURUSD', bid, ask: Math.round((bid + 0.0002) * 1e5) / 1e5 }] },
  })
  expect(r.status).toBe(200)
}

beforeAll(async () => {
  t = await makeTestApp({ clock })
  demo = await t.customerToken()
  dealer = await t.staffToken(3, 'dealer-pass-1')
  masterUser = await t.userToken(100004, 'master-pass-1')
  for (const login of FOLLOWERS) users.set(login, await t.userToken(login))
  await tick(0)
  const masterId = (await t.request('GET', '/copytrade/masters', { token: demo })).json.rows[0].id
  for (const login of FOLLOWERS) {
    await t.request('POST', '/copytrade/follower', { token: demo, body: { login } })
    const r = await t.request('POST', '/copytrade/subscription', {
      token: demo,
      body: {
        follower_login: login,
        master_id: masterId,
        policy_version: 1,
        volume_mode: login === 100003 ? 2 : 1,
      },
    })
    expect(r.status).toBe(200)
    subs.push(r.json.id)
  }
})
afterAll(() => t.close())

test('random master trades, ticks, subscription changes and own closes keep the copies consistent', async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(command, { minLength: 1, maxLength: 12 }), async (cmds) => {
      for (const c of cmds) {
        if (c.kind === 'tick') await tick(c.move)
        else if (c.kind === 'open') {
          const r = await t.request('POST', '/trade/open', {
            token: masterUser,
            body: { login: 100004, cmd: c.cmd, volume: c.volume, symbol: 'EURUSD', sl: 0, tp: 0 },
          })
          expect(r.status).toBe(200)
        } else if (c.kind === 'close') {
          const open = await t.ctx.db.select().from(orders).where(sql`login = 100004 and state = 'open'`)
          if (open.length === 0) continue
          const o = open[c.pick % open.length]!
          const volume = c.part && o.volume > 1 ? Math.floor(o.volume / 2) : undefined
          const r = await t.request('DELETE', '/trade/close', {
            token: masterUser,
            body: { order: o.ticket, volume },
          })
          expect(r.status).toBe(200)
        } else if (c.kind === 'own-close') {
          const login = FOLLOWERS[c.who % FOLLOWERS.length]!
          const open = await t.ctx.db.select().from(orders).where(sql`login = ${login} and state = 'open'`)
          if (open.length === 0) continue
          const o = open[c.pick % open.length]!
          await t.request('DELETE', '/trade/close', { token: users.get(login)!, body: { order: o.ticket } })
        } else if (c.kind === 'change') {
          const sub = subs[c.who % subs.length]!
          if (c.action === 'settings')
            await t.request('PUT', `/copytrade/subscription/${sub}`, {
              token: demo,
              body: { copy_mode: c.copy_mode, volume_param: c.volume_param },
            })
          else await t.request('POST', `/copytrade/subscription/${sub}/${c.action}`, { token: demo })
        } else {
          await t.runJob('copytrade.reconcile')
          await t.runJob('copytrade.audit')
        }
        await t.settle()
      }
      await t.settle()
      const links = await t.ctx.db.select().from(copyLinks)
      const allOrders = await t.ctx.db.select().from(orders)
      const byTicket = new Map(allOrders.map((o) => [o.ticket, o]))
      const subRows = new Map((await t.ctx.db.select().from(copySubscriptions)).map((s) => [s.id, s]))
      for (const l of links) {
        // each link still open matches an open follower position of its size
        if (l.status === 'open') {
          const f = byTicket.get(l.followerTicket!)
          expect([l.id, f?.state, f?.login, f?.volume]).toEqual([
            l.id,
            'open',
            l.followerLogin,
            l.followerVolume,
          ])
          // and its master position is open, unless the subscription does not copy closes
          const mode = JSON.parse(subRows.get(l.subscriptionId)!.settings).copy_mode
          if (mode !== 1) expect([l.id, byTicket.get(l.masterTicket)?.state]).toEqual([l.id, 'open'])
        }
        // nothing is left half-done once the events are delivered
        expect(['pending', 'opening', 'closing']).not.toContain(l.status)
      }
      // no master position copied twice into one subscription: one position (not a closed part) per key
      const copies = new Map<string, number>()
      for (const o of allOrders) {
        if (!o.actor.startsWith('copy:') || o.parent !== null || !o.comment.startsWith('copy #')) continue
        const k = `${o.actor}:${o.comment}`
        copies.set(k, (copies.get(k) ?? 0) + 1)
      }
      for (const [k, n] of copies) expect([k, n]).toEqual([k, 1])
      // ledger = balance for every account
      const sums = await t.ctx.db.all<{ login: number; s: number }>(
        sql`select login, coalesce(sum(amount), 0) as s from balance_operations group by login`,
      )
      const ledger = new Map(sums.map((r) => [r.login, Number(r.s)]))
      for (const a of await t.ctx.db.select().from(accounts))
        expect([a.login, a.balance]).toEqual([a.login, ledger.get(a.login) ?? 0])
      // accrued = settled + pending: every settled accrual has its two operations, a pending one none,
      // and each subscription's paid fees are its settled accruals
      const rewards = await t.ctx.db.select().from(copyRewards)
      const ops = await t.ctx.db
        .select()
        .from(balanceOperations)
        .where(eq(balanceOperations.reason, 'TR_REASON_COPY_REWARD'))
      for (const r of rewards) {
        const mine = ops.filter((o) => JSON.parse(o.apiData!).copy_reward_accrual_id === r.id)
        expect([r.id, mine.length]).toEqual([r.id, r.status === 'settled' ? 2 : 0])
        if (r.status === 'settled')
          expect(-mine.find((o) => o.op === 'OP_BALANCE_OUT')!.amount).toBe(r.amountMinor)
      }
      for (const s of subRows.values())
        expect(s.feesMinor).toBe(
          rewards
            .filter((r) => r.subscriptionId === s.id && r.status === 'settled')
            .reduce((a, r) => a + r.amountMinor, 0),
        )
    }),
    { numRuns: 20 },
  )
}, 180_000)
