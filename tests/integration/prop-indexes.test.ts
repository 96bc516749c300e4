// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { SQLiteSyncDialect } from 'drizzle-orm/sqlite-core'
import { endDays, OPEN_DAYS } from '../../src/modules/prop/evaluator'
import { RECENT_POSITIONS } from '../../src/modules/trading/book/figures'
import { makeTestApp, type TestApp } from '../support/app'

/**
 * Every evaluator pass reads each active phase's days not ended yet through the partial index
 * `prop_days_open`: through the primary key alone it would read every day the phase ever had (30 rows a
 * phase a month into its challenge). The day's first pass then ends the days it read, each by its primary
 * key (phase and day), not by a range of either index. Its own app: an EXPLAIN on
 * libsql's file connection leaves that connection's snapshot open, and later reads would not see writes.
 */
let t: TestApp
beforeAll(async () => {
  t = await makeTestApp()
})
afterAll(() => t.close())

const plan = async (text: string, args: unknown[]) =>
  (await t.ctx.db.execute({ sql: `explain query plan ${text}`, args: args as never })).rows
    .map((r) => String(r.detail))
    .join(' | ')

test("a pass finds the phases' days not ended yet through prop_days_open, and ends each by its key", async () => {
  expect(await plan(OPEN_DAYS, ['[1, 2]'])).toContain('USING INDEX prop_days_open')
  const ended = new SQLiteSyncDialect().sqlToQuery(endDays('[{"p":1,"d":"2026-11-24","b":1,"e":1}]'))
  expect(await plan(ended.sql, ended.params)).toContain('(phase_id=? AND day=?)')
})

test("a later pass reads a phase's open positions and its recent closes through indexes, not its every order", async () => {
  const p = await plan(RECENT_POSITIONS, ['[1, 2]', 0])
  expect(p).toContain('USING INDEX orders_login_state')
  expect(p).toContain('USING INDEX orders_history')
  expect(p).not.toContain('SCAN orders')
})
