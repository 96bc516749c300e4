// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { SQLiteSyncDialect } from 'drizzle-orm/sqlite-core'
import { LATEST_DAYS, SINCE_SETTLED, settleDays } from '../../src/modules/prop/evaluator'
import { failedSince } from '../../src/modules/prop/live'
import { RECENT_POSITIONS } from '../../src/modules/trading/book/figures'
import { makeTestApp, type TestApp } from '../support/app'

/**
 * Every evaluator pass reads each active phase's latest day by the primary key, from the last entry of the
 * phase's range: not every day the phase ever had (30 rows a phase a month into its challenge). The rows
 * from the latest settled day, read when the latest is not, walk the same key back. The pass settles days
 * each by its primary key (phase and day). Its own app: an EXPLAIN on libsql's file connection leaves that
 * connection's snapshot open, and later reads would not see writes.
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

test("a pass finds the phases' latest days and the days it settles by the primary key, and settles each by its key", async () => {
  // the latest day: the last entry of the phase's range of the key, then its row by rowid
  const latest = await plan(LATEST_DAYS, ['[1, 2]'])
  expect(latest).toContain('SEARCH d USING INTEGER PRIMARY KEY (rowid=?)')
  expect(latest).toMatch(/SEARCH x USING (COVERING )?INDEX sqlite_autoindex_prop_days_1 \(phase_id=\?\)/)
  // the days from the latest settled one: a range of the key from that day
  const since = await plan(SINCE_SETTLED, ['[1, 2]'])
  expect(since).toContain('SEARCH d USING INDEX sqlite_autoindex_prop_days_1 (phase_id=? AND day>?)')
  expect(since).toMatch(/SEARCH x USING (COVERING )?INDEX sqlite_autoindex_prop_days_1 \(phase_id=\?\)/)
  for (const p of [latest, since]) expect(p).not.toContain('SCAN prop_days')
  const settled = new SQLiteSyncDialect().sqlToQuery(settleDays('[{"p":1,"d":"2026-11-24"}]'))
  expect(await plan(settled.sql, settled.params)).toContain('(phase_id=? AND day=?)')
})

test("a later pass reads a phase's open positions and its recent closes through indexes, not its every order", async () => {
  const p = await plan(RECENT_POSITIONS, ['[1, 2]', 0])
  expect(p).toContain('USING INDEX orders_login_state')
  expect(p).toContain('USING INDEX orders_history')
  expect(p).not.toContain('SCAN orders')
})

test("the engine's minute pass reads the phases failed lately from a range of an index alone, not every failed phase", async () => {
  const q = failedSince(t.ctx.db, 0).toSQL()
  const p = await plan(q.sql, q.params)
  expect(p).toContain('USING COVERING INDEX prop_phases_status_end (status=? AND end_time>?)')
  expect(p).not.toContain('SCAN prop_phases')
})
