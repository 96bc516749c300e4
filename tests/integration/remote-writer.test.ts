import { afterAll, beforeAll, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { type Database, openDatabase } from '../../src/kernel/db/client'
import { isBusy } from '../../src/kernel/db/errors'
import { failure } from '../support/database'
import { pauseProcess } from '../support/ports'
import { type SqldServer, startSqld } from '../support/sqld'

// The remote adapter's write queue on a real sqld (ADR 0019, 0025): a member that holds its turn past
// its timeout while its round trip is still in flight is rolled back, and the bookkeeping that says so
// goes with the next member's round trip.
let sqld: SqldServer
let database: Database
beforeAll(async () => {
  sqld = await startSqld()
  database = await openDatabase(sqld.url.replace(/^http/, 'ws'), undefined, {
    remote: { txTimeoutMs: 100, queueTimeoutMs: 10_000, statementTimeoutMs: 10_000 },
  })
  await database.db.run(sql`create table t (v text primary key)`)
})
afterAll(async () => {
  database?.close()
  await sqld?.stop()
})

test('a member timed out during its own round trip is undone; the next member commits alone', async () => {
  const { db } = database
  const slow = failure(
    db.transaction(async (tx) => {
      await tx.run(sql`insert into t (v) values ('timed out')`)
      // a statement that outlasts the member's 100 ms: its timer fires while the answer is on its way
      await tx.run(
        sql.raw(
          'with recursive n(i) as (select 1 union all select i + 1 from n where i < 3000000) select count(*) from n',
        ),
      )
    }),
  )
  // waits for its turn behind the slow one; its savepoint is pushed while that round trip is in flight
  const next = db.transaction((tx) => tx.run(sql`insert into t (v) values ('next')`))
  expect(await slow).toMatch(/held its turn too long/)
  await next
  const rows = await database.db.client.execute('select v from t order by v')
  expect(rows.rows.map((r) => r.v)).toEqual(['next'])
})

test("a transaction's reads sent together (Tx.readAll) go in one round trip and see its own writes", async () => {
  const out = await database.db.transaction(async (tx) => {
    await tx.run(sql`insert into t (v) values ('mine')`)
    // the member transaction under Tx: each of its calls is one round trip of the batch
    type Driver = { batch(s: unknown): Promise<unknown>; execute(s: unknown): Promise<unknown> }
    const driver = (tx as unknown as { driver: Driver }).driver
    let trips = 0
    const { batch, execute } = driver
    driver.batch = (s) => {
      trips++
      return batch.call(driver, s)
    }
    driver.execute = (s) => {
      trips++
      return execute.call(driver, s)
    }
    const [mine, other] = await tx.readAll([
      { sql: 'select count(*) as n from t where v = ?', args: ['mine'] },
      'select 42 as x',
    ])
    return { trips, n: Number(mine!.rows[0]!.n), x: Number(other!.rows[0]!.x) }
  })
  expect(out).toEqual({ trips: 1, n: 1, x: 42 })
})

// a hostile probe: with sqld paused (SIGSTOP, as a network that drops packets looks), writes failed at
// their bound but every read hung until it resumed, and its request with it
test('a read with no answer from a paused sqld fails as busy within the bound; reads work once it resumes', async () => {
  const paused = await startSqld()
  try {
    for (const url of [paused.url, paused.url.replace(/^http/, 'ws')]) {
      const d = await openDatabase(url, undefined, {
        remote: { txTimeoutMs: 1500, queueTimeoutMs: 1500, statementTimeoutMs: 1500 },
      })
      try {
        await d.db.run(sql`create table if not exists p (v integer)`)
        expect(await d.db.all(sql`select count(*) as n from p`)).toEqual([{ n: 0 }])
        await pauseProcess(paused.pid)
        try {
          const started = performance.now()
          const outcome = await Promise.race([
            d.db.all(sql`select count(*) as n from p`).then(
              () => 'answered',
              (e: unknown) => e,
            ),
            Bun.sleep(6000).then(() => 'still waiting'),
          ])
          // what it was, when it was not a busy failure
          expect([url, isBusy(outcome), isBusy(outcome) ? 'busy' : String(outcome)]).toEqual([
            url,
            true,
            'busy',
          ])
          expect(performance.now() - started).toBeLessThan(3000)
        } finally {
          process.kill(paused.pid, 'SIGCONT')
        }
        expect(await d.db.all(sql`select count(*) as n from p`)).toEqual([{ n: 0 }])
      } finally {
        d.close()
      }
    }
  } finally {
    await paused.stop()
  }
}, 30_000)
