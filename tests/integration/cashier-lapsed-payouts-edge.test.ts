// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
// The edge-jobs review of d74f9dc (cashier): cashier.reconcile at the edge first holds withdrawals whose
// payout send lease lapsed, each in its own transaction, up to 100 a run: at the edge (every job due in a
// scheduled() invocation shares its 1,000 subrequests) a run moves 5 and the rest go over the next runs.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import type { ResultSet } from '@libsql/client'
import { sql } from 'drizzle-orm'
import { holdLapsedPayouts } from '../../src/modules/cashier/backoffice/lapsed-payouts'
import type { CashierCtx } from '../../src/modules/cashier/context'
import { STATUS } from '../../src/modules/cashier/domain/status'
import { makeTestApp, type TestApp } from '../support/app'

let t: TestApp
beforeAll(async () => {
  t = await makeTestApp()
}, 120_000)
afterAll(() => t.close())

const count = async (q: string) => Number(((await t.ctx.db.execute(q)) as ResultSet).rows[0]!.n)

test('holding lapsed payouts at the edge moves 5 a run (each its own transaction); elsewhere a run moves them all', async () => {
  const now = t.ctx.clock.now()
  // 12 withdrawals being paid out whose send lease lapsed a minute ago (the sending instance gone)
  for (let i = 0; i < 12; i++)
    await t.ctx.db.run(
      sql.raw(`insert into cashier_transactions (brand_id, customer_id, login, kind, method, provider, status, amount,
         currency, payout_sending_until, created_at, updated_at)
       values (1, 1, 100001, 'withdrawal', 'wire', 'wire', ${STATUS.provider_confirmed}, ${1000 + i}, 'USD',
         ${now - 60_000}, ${now - 600_000}, ${now - 600_000})`),
    )
  const lapsed = `select count(*) as n from cashier_transactions where kind = 'withdrawal' and status = ${STATUS.provider_confirmed} and payout_sending_until > 0`
  const held = `select count(*) as n from cashier_transactions where kind = 'withdrawal' and status = ${STATUS.manual_review} and flagged = 1`
  expect(await count(lapsed)).toBe(12)
  const edge = { ...t.ctx, edge: true } as unknown as CashierCtx
  // before: one run moved all 12 (up to 100, each a transaction of a few statements)
  expect(await holdLapsedPayouts(edge, now)).toBe(5)
  expect(await count(held)).toBe(5)
  expect(await holdLapsedPayouts(edge, now)).toBe(5)
  const server = { ...t.ctx, edge: false } as unknown as CashierCtx
  expect(await holdLapsedPayouts(server, now)).toBe(2)
  expect(await count(lapsed)).toBe(0)
  expect(await count(held)).toBe(12)
})
