// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
// The edge-jobs probe's cashier finding (.tmp/probe-edgejobs): a Worker's scheduled() runs every cluster
// job due in one invocation, and all of them share its 1,000 subrequests (each statement, cache call and
// provider call is one). cashier.reconcile visited 1,000 deposits a run (a provider call each): on a
// broker with 1,500 credited deposits it spent 1,015 every minute, the jobs after it were refused, and
// its cursor, saved only at the end of a run, never moved. At the edge a run of it visits a page, and the
// cursor is saved after each page; cashier.inbox and cashier.credit-retry (a transaction a row) take
// fewer rows a run there too. The makeTestApp app is a Bun server: the cashier's context is given the
// edge flag here, as the Worker's is (tests/workers/workers.test.ts runs the Worker itself).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq, sql } from 'drizzle-orm'
import { MemoryStore } from '../../src/kernel/cache/memory'
import { ManualClock } from '../../src/kernel/clock'
import { AccountsPort } from '../../src/modules/accounts'
import {
  MAX_ROWS,
  queueProviderState,
  reconcile,
  walkById,
} from '../../src/modules/cashier/backoffice/reconcile'
import { RETRIES_PER_RUN, retryCredits } from '../../src/modules/cashier/backoffice/retry-credits'
import { cashierConfig } from '../../src/modules/cashier/config'
import type { CashierCtx } from '../../src/modules/cashier/context'
import { STATUS } from '../../src/modules/cashier/domain/status'
import { checkoutProvider } from '../../src/modules/cashier/providers/checkout'
import { sandboxProvider } from '../../src/modules/cashier/providers/sandbox'
import { wireProvider } from '../../src/modules/cashier/providers/wire'
import { SandboxGateway } from '../../src/modules/cashier/sandbox-page'
import { cashierInbox, cashierTransactions } from '../../src/modules/cashier/schema'
import { drainInbox, INBOX_PER_RUN } from '../../src/modules/cashier/webhooks'
import { KycPort } from '../../src/modules/kyc'
import { makeTestApp, type TestApp } from '../support/app'
import { SubrequestCounter } from '../support/subrequests'

const clock = new ManualClock(Date.now())
const DEPOSITS = 1500
/** What a job may spend of the invocation's 1,000 subrequests that ~30 jobs share. */
const JOB_BUDGET = 200
let t: TestApp
let edge: CashierCtx
let server: CashierCtx

/** What a job spends of a Worker invocation's subrequests. */
const count = new SubrequestCounter()

/**
 * What `f` spends: statements and cache calls (each a subrequest at the edge), and the provider's status
 * calls (a subrequest each at a real provider; the simulated one's read of its table is a statement).
 */
async function spent<T>(f: () => Promise<T>) {
  count.reset()
  providerCalls = 0
  const r = await f()
  const { statements, cacheCalls, total } = count
  return { r, statements, cacheCalls, providerCalls, total }
}
let providerCalls = 0

/** The cashier's context as the module builds it (src/modules/cashier/index.ts), with or without the edge flag. */
function cashierCtx(isEdge: boolean): CashierCtx {
  const ctx: CashierCtx = {
    ...t.ctx,
    edge: isEdge,
    accounts: t.ports.get(AccountsPort),
    kyc: t.ports.get(KycPort),
    providers: new Map(),
    settings: cashierConfig(t.config),
  }
  const gateway = new SandboxGateway(ctx)
  for (const p of [
    sandboxProvider(gateway),
    checkoutProvider(gateway),
    wireProvider(ctx.settings.wireBank),
  ]) {
    const status = p.fetchStatus
    // a call to the payment provider is a subrequest of its own (here it reads the simulator's table)
    ctx.providers.set(
      p.id,
      status
        ? {
            ...p,
            fetchStatus: (ref: string) => {
              providerCalls++
              return status(ref)
            },
          }
        : p,
    )
  }
  return ctx
}

const cursor = async () => Number((await t.ctx.store.get('cashier:reconcile:after')) ?? 0)

/** `n` card deposits of the demo customer at the simulated Checkout.com, in `status`, captured there. */
async function seedDeposits(n: number, status: number, tag: string) {
  const old = clock.now() - 30 * 86_400_000
  await t.ctx.db.run(
    sql.raw(`insert into cashier_transactions (brand_id, customer_id, login, kind, method, provider, status,
       amount, currency, provider_ref, created_at, updated_at)
     with recursive n(i) as (select 1 union all select i + 1 from n where i < ${n})
     select c.brand_id, c.id, 100001, 'deposit', 'card', 'checkout', ${status}, 10000, 'USD', 'pay_${tag}' || i, ${old}, ${old}
     from customers c, n where c.id = 1`),
  )
  await t.ctx.db.run(
    sql.raw(`insert into sandbox_payments (token, brand_id, provider, reference, amount, currency, status,
       notify_url, return_url, created_at, updated_at)
     select substr(provider_ref, 5), brand_id, 'checkout', id, amount, currency, 'captured', 'http://localhost/n',
       'http://localhost/r', created_at, updated_at from cashier_transactions where provider_ref like 'pay_${tag}%'`),
  )
  return (
    await t.ctx.db
      .select()
      .from(cashierTransactions)
      .where(sql`${cashierTransactions.providerRef} like ${`pay_${tag}%`}`)
  ).sort((a, b) => a.id - b.id)
}

beforeAll(async () => {
  t = await makeTestApp({ clock, store: count.store(new MemoryStore(clock)) })
  count.watch(t)
  edge = cashierCtx(true)
  server = cashierCtx(false)
  // a broker's history: DEPOSITS card deposits, credited weeks ago, each captured at the provider
  await seedDeposits(DEPOSITS, STATUS.credited, 'tokr')
}, 180_000)
afterAll(() => t.close())

describe('cashier.reconcile at the edge', () => {
  test('on 1,500 credited deposits a run spends a fraction of the invocation, and its cursor moves on run after run', async () => {
    await t.ctx.store.del('cashier:reconcile:after')
    const first = await spent(() => reconcile({ ctx: edge }))
    expect(first.providerCalls).toBe(MAX_ROWS.edge)
    expect(first.total).toBeLessThanOrEqual(JOB_BUDGET)
    const a = await cursor()
    expect(a).toBeGreaterThan(0)
    const second = await spent(() => reconcile({ ctx: edge }))
    expect(second.total).toBeLessThanOrEqual(JOB_BUDGET)
    const b = await cursor()
    expect(b).toBeGreaterThan(a)
    // the deposits past the first page are the ones the second run asked about
    const rows = await t.ctx.db
      .select({ id: cashierTransactions.id })
      .from(cashierTransactions)
      .where(sql`${cashierTransactions.id} > ${a} and ${cashierTransactions.id} <= ${b} and kind = 'deposit'`)
    expect(rows.length).toBeGreaterThanOrEqual(MAX_ROWS.edge)
  })

  test('on the Bun server a run still visits up to MAX_ROWS.server', async () => {
    await t.ctx.store.del('cashier:reconcile:after')
    const run = await spent(() => reconcile({ ctx: server }))
    expect(run.providerCalls).toBe(MAX_ROWS.server)
  })

  test('a run cut off part way (a failure, the subrequests spent) keeps the cursor past the pages it finished', async () => {
    await t.ctx.store.del('test:edge-walk')
    const where = eq(cashierTransactions.kind, 'deposit')
    const seen: number[] = []
    const err = await walkById(
      server,
      'test:edge-walk',
      where,
      async (row) => {
        if (seen.length === 250) throw new Error('Too many subrequests.')
        seen.push(row.id)
      },
      1000,
    ).catch((e) => e)
    expect(String(err)).toContain('Too many subrequests.')
    // the two pages it finished are not walked again; the third, cut off, is
    expect(Number(await t.ctx.store.get('test:edge-walk'))).toBe(seen[199]!)
    const next: number[] = []
    await walkById(server, 'test:edge-walk', where, async (row) => void next.push(row.id), 5)
    expect(next[0]).toBe(seen[200]!)
  })
})

describe('cashier.inbox and cashier.credit-retry at the edge take a bounded number of rows a run', () => {
  test('cashier.inbox: 300 stored webhooks, INBOX_PER_RUN.edge a run there, the rest left to the next runs', async () => {
    const rows = await seedDeposits(300, STATUS.pending_payment, 'tokin')
    const checkout = server.providers.get('checkout')!
    for (const row of rows)
      expect(await queueProviderState(server, checkout, row, 'confirmed', clock.now())).toBe(true)
    const queued = async () =>
      (
        await t.ctx.db
          .select({ n: sql<number>`count(*)` })
          .from(cashierInbox)
          .where(eq(cashierInbox.state, 'received'))
      )[0]!.n
    expect(await queued()).toBe(300)
    const run = await spent(() => drainInbox(edge))
    expect(run.r).toBe(INBOX_PER_RUN.edge)
    expect(run.total).toBeLessThanOrEqual(JOB_BUDGET)
    expect(await queued()).toBe(300 - INBOX_PER_RUN.edge)
    // each credited: the deposits the run took are credited, oldest first
    const credited = await t.ctx.db
      .select({ id: cashierTransactions.id })
      .from(cashierTransactions)
      .where(sql`provider_ref like 'pay_tokin%' and status = ${STATUS.credited}`)
    expect(credited.map((r) => r.id).sort((a, b) => a - b)).toEqual(
      rows.slice(0, INBOX_PER_RUN.edge).map((r) => r.id),
    )
    // the rest in the next runs (on the server, INBOX_PER_RUN.server a run)
    expect(await drainInbox(server)).toBe(INBOX_PER_RUN.server)
    expect(await drainInbox(server)).toBe(300 - INBOX_PER_RUN.edge - INBOX_PER_RUN.server)
    expect(await queued()).toBe(0)
  })

  test('cashier.credit-retry: 150 deposits whose credit failed, RETRIES_PER_RUN.edge a run there', async () => {
    const rows = await seedDeposits(150, STATUS.credit_failed, 'tokcf')
    const failed = async () =>
      (
        await t.ctx.db
          .select({ n: sql<number>`count(*)` })
          .from(cashierTransactions)
          .where(sql`provider_ref like 'pay_tokcf%' and status = ${STATUS.credit_failed}`)
      )[0]!.n
    const run = await spent(() => retryCredits({ ctx: edge }))
    expect(run.r).toBe(RETRIES_PER_RUN.edge)
    expect(run.total).toBeLessThanOrEqual(JOB_BUDGET)
    expect(await failed()).toBe(rows.length - RETRIES_PER_RUN.edge)
    // the server's runs take RETRIES_PER_RUN.server
    expect(await retryCredits({ ctx: server })).toBe(
      Math.min(RETRIES_PER_RUN.server, rows.length - RETRIES_PER_RUN.edge),
    )
  })
})
