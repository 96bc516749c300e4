// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { and, eq, type SQL, sql } from 'drizzle-orm'
import type { Queryable } from '../../src/kernel/db/db'
import { undeliveredEvents } from '../../src/kernel/events/undelivered'
import { COPY_CLOSE_CONSUMERS, COPY_CLOSES } from '../../src/modules/copytrade/copier/equity'
import { manualModeOf } from '../../src/modules/copytrade/copier/manual-guard'
import { copySubscriptions, liveSubscription } from '../../src/modules/copytrade/schema'
import { makeTestApp, type TestApp } from '../support/app'

/**
 * The reads of a follower's live subscriptions (every balance operation, a client's own trade, the
 * follower routes) find them through the partial index `copy_subscriptions_live`; with the statuses as a
 * list of bound values SQLite cannot tell that the index's condition holds, and scanned the table. A
 * master's are found by its login (by its id alone, the table was scanned on each of its opens).
 */
let t: TestApp
beforeAll(async () => {
  t = await makeTestApp()
})
afterAll(() => t.close())

async function plan(q: { toSQL(): { sql: string; params: unknown[] } }) {
  const { sql: text, params } = q.toSQL()
  const rows = await t.ctx.db.execute({ sql: `explain query plan ${text}`, args: params as never })
  return rows.rows.map((r) => String(r.detail)).join(' | ')
}

test("a follower's live subscriptions are read through the partial index", async () => {
  const db = t.ctx.db
  const byFollower = db
    .select()
    .from(copySubscriptions)
    .where(and(eq(copySubscriptions.followerLogin, 100001), liveSubscription))
  expect(await plan(byFollower)).toContain('USING INDEX copy_subscriptions_live')
  expect(await plan(manualModeOf(db, 100001))).toContain('USING INDEX copy_subscriptions_live')
  const followers = db
    .selectDistinct({ login: copySubscriptions.followerLogin })
    .from(copySubscriptions)
    .where(
      and(
        sql`${copySubscriptions.followerLogin} in (select value from json_each(${'[100001]'}))`,
        liveSubscription,
      ),
    )
  expect(await plan(followers)).toContain('USING INDEX copy_subscriptions_live')
})

test("a master's live subscriptions (its every open) are read through the index on the master's login", async () => {
  const byMaster = t.ctx.db
    .select()
    .from(copySubscriptions)
    .where(
      and(eq(copySubscriptions.masterLogin, 100002), eq(copySubscriptions.masterId, 1), liveSubscription),
    )
  expect(await plan(byMaster)).toContain('USING INDEX copy_subscriptions_master')
})

test("the closes still to come (copy equity, a fee, the flow consumer's transaction) read the parked ones through the partial index of dead_letters", async () => {
  // closesToCome's read, explained: dead_letters is never deleted from, a scan of it grows with every
  // event ever parked, on each fee and flow; only the rows still parked are in `dead_letters_parked`
  const plans: string[] = []
  // a reader that explains instead (the kernel's reader returns drizzle's thenable, not a bare promise)
  const explain = {
    all: async <T>(query: SQL) => {
      const rows = await t.ctx.db.all<{ detail: string }>(sql`explain query plan ${query}`)
      plans.push(rows.map((r) => String(r.detail)).join(' | '))
      return [] as T[]
    },
  } as unknown as Pick<Queryable, 'all'>
  await undeliveredEvents(explain, {
    consumers: COPY_CLOSE_CONSUMERS,
    topics: COPY_CLOSES,
    path: '$.login',
    values: [100001, 100002],
    parked: true,
  })
  expect(plans).toHaveLength(1)
  expect(plans[0]).toContain('USING INDEX dead_letters_parked')
  expect(plans[0]).not.toMatch(/SCAN (o|dead_letters)\b(?! USING)/)
})
