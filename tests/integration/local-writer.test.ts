import { afterAll, beforeEach, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import type { LocalClient } from '../../src/kernel/db/local/client'
import { failure, tempDatabase } from '../support/database'

// The local adapter's write queue on a real libSQL file (ADR 0025): write transactions that wait for
// their turn commit together in one database transaction, each under a savepoint of its own but the
// first, and each is told once that transaction has committed.
const database = await tempDatabase('writer')
const { db } = database
const local = database.client as unknown as LocalClient
afterAll(() => database.close())
await db.run(sql`create table t (v text primary key)`)
beforeEach(async () => {
  await db.run(sql`delete from t`)
})

const insert = (v: string) => db.transaction((tx) => tx.run(sql`insert into t (v) values (${v})`))
/** What another connection sees: committed rows only. */
const committed = async () =>
  (await database.client.execute('select v from t order by v')).rows.map((r) => r.v as string)

function gate() {
  let open!: () => void
  const opened = new Promise<void>((r) => {
    open = r
  })
  return { open, opened }
}

/** A transaction that writes `v` and holds the writer's turn until `release`. */
function holdTurn(v: string) {
  const g = gate()
  const done = db.transaction(async (tx) => {
    await tx.run(sql`insert into t (v) values (${v})`)
    await g.opened
  })
  return { done, release: g.open }
}

test('transactions that waited commit with the one before them; each is told after the commit', async () => {
  const g = gate()
  const order: string[] = []
  const a = db
    .transaction(async (tx) => {
      await tx.run(sql`insert into t (v) values ('a')`)
      await g.opened
    })
    .then(() => order.push('a committed'))
  const b = db
    .transaction(async (tx) => {
      // a's writes are in the same database transaction, not committed yet
      expect(await tx.all(sql`select v from t`)).toEqual([{ v: 'a' }])
      expect(await committed()).toEqual([])
      await tx.run(sql`insert into t (v) values ('b')`)
      order.push('b ran')
    })
    .then(() => order.push('b committed'))
  g.open()
  await Promise.all([a, b])
  expect(order).toEqual(['b ran', 'a committed', 'b committed'])
  expect(await committed()).toEqual(['a', 'b'])
})

test('a transaction that fails undoes only its own writes; the others of its batch commit', async () => {
  const a = holdTurn('a')
  const failed = failure(
    db.transaction(async (tx) => {
      await tx.run(sql`insert into t (v) values ('x')`)
      throw new Error('refused')
    }),
  )
  // a unique key an earlier member of the batch took: the statement fails, the transaction with it
  const duplicate = failure(insert('a'))
  const c = insert('c')
  a.release()
  await a.done
  expect(await failed).toBe('refused')
  expect(await duplicate).toMatch(/UNIQUE/)
  await c
  expect(await committed()).toEqual(['a', 'c'])
})

/** Whether the member runs under the writer's savepoint: rolling back to it fails when there is none. */
async function underSavepoint(tx: { run(q: ReturnType<typeof sql.raw>): Promise<unknown> }) {
  return (await failure(tx.run(sql.raw('rollback to member')))) === 'no failure'
}

test('the first member of a transaction has no savepoint; when it fails after writing, the transaction starts again for the next', async () => {
  const batches = local.state().batches
  const g = gate()
  const bare: boolean[] = []
  const failing = (v: string, wait?: Promise<void>) =>
    failure(
      db.transaction(async (tx) => {
        bare.push(!(await underSavepoint(tx)))
        await tx.run(sql`insert into t (v) values (${v})`)
        await wait
        throw new Error(`refused ${v}`)
      }),
    )
  const first = failing('x1', g.opened)
  const second = failing('x2')
  const third = db.transaction(async (tx) => {
    bare.push(!(await underSavepoint(tx)))
    await tx.run(sql`insert into t (v) values ('c')`)
  })
  const fourth = failing('x4')
  const fifth = insert('e')
  g.open()
  expect(await first).toBe('refused x1')
  expect(await second).toBe('refused x2')
  await third
  expect(await fourth).toBe('refused x4')
  await fifth
  // the first three each began their database transaction; the fourth followed one that wrote
  expect(bare).toEqual([true, true, true, false])
  expect(await committed()).toEqual(['c', 'e'])
  // one batch: the failed members' rollbacks did not end it
  expect(local.state().batches).toBe(batches + 1)
})

test('a deferred write that fails fails its own transaction only', async () => {
  const a = holdTurn('a')
  const deferred = failure(
    db.transaction(async (tx) => {
      // a write whose answer nobody reads: on a local file it runs at once, and so fails here
      await tx.deferred('insert into t (v) values (?)', ['a'])
    }),
  )
  const c = insert('c')
  a.release()
  await a.done
  expect(await deferred).toMatch(/UNIQUE/)
  await c
  expect(await committed()).toEqual(['a', 'c'])
})

test('a transaction asked for in the loop turn after the last one settled joins its batch', async () => {
  const order: string[] = []
  let second: Promise<unknown> | undefined
  const first = db
    .transaction(async (tx) => {
      await tx.run(sql`insert into t (v) values ('1')`)
      // asked for once this one has settled, in the next turn of the event loop (a request read then)
      setImmediate(() => {
        second = db
          .transaction(async (tx2) => {
            order.push('2 ran')
            await tx2.run(sql`insert into t (v) values ('2')`)
          })
          .then(() => order.push('2 committed'))
      })
    })
    .then(() => order.push('1 committed'))
  await first
  await second
  // the first one's commit waited for the second, in the same database transaction
  expect(order).toEqual(['2 ran', '1 committed', '2 committed'])
  expect(await committed()).toEqual(['1', '2'])
})

test('a batch takes members for 10 ms at most: transactions that keep coming do not hold its answers', async () => {
  let stop = false
  let started = 0
  const chain: Promise<unknown>[] = []
  // each transaction asks for the next one in the following loop turn, for as long as the test runs
  const next = () => {
    if (stop) return
    started++
    chain.push(
      db.transaction(async (tx) => {
        await tx.run(sql`insert into t (v) values (${`c${started}`})`)
        await new Promise((r) => setTimeout(r, 1))
        setImmediate(next)
      }),
    )
  }
  const t0 = performance.now()
  next()
  await chain[0]
  const waited = performance.now() - t0
  stop = true
  await Promise.all(chain)
  // the first one's batch closed after its budget, not when the stream of transactions ended
  expect(waited).toBeLessThan(200)
  expect(started).toBeGreaterThan(1)
})

test('a lone transaction commits without waiting for more', async () => {
  const t0 = performance.now()
  for (let i = 0; i < 20; i++) await insert(`lone${i}`)
  expect(performance.now() - t0).toBeLessThan(1000)
  expect((await committed()).length).toBe(20)
})

test('when SQLite rolls the whole transaction back, every member of the batch is told; the next batch runs clean', async () => {
  const g = gate()
  const pages = Number((await database.client.execute('pragma page_count')).rows[0]![0])
  const a = db.transaction(async (tx) => {
    await tx.run(sql`insert into t (v) values ('a')`)
    // a database that may not grow: the next member's large row fails with SQLITE_FULL, which rolls
    // back the database transaction with every member's writes in it
    await tx.run(sql.raw(`PRAGMA max_page_count = ${pages + 1}`))
    await g.opened
  })
  const big = failure(insert('x'.repeat(20_000)))
  const after = failure(insert('after'))
  g.open()
  expect(await big).toMatch(/full/i)
  // a had settled, its writes were in the transaction SQLite rolled back: it is told so
  expect(await failure(a)).toMatch(/full/i)
  // the one queued behind them runs in a new batch (a small row still fits)
  expect(await after).toBe('no failure')
  await db.transaction((tx) => tx.run(sql.raw('PRAGMA max_page_count = 1073741823')))
  await insert('later')
  expect(await committed()).toEqual(['after', 'later'])
})

test('an exclusive turn waits for the batch before it and holds back the transactions after it', async () => {
  const order: string[] = []
  const a = holdTurn('a')
  const held = local.exclusive(async () => {
    order.push(`exclusive sees ${(await committed()).join(',')}`)
    await new Promise((r) => setTimeout(r, 20))
    order.push('exclusive done')
  })
  const b = insert('b').then(() => order.push('b committed'))
  a.release()
  await Promise.all([a.done, held, b])
  expect(order).toEqual(['exclusive sees a', 'exclusive done', 'b committed'])
})

test('an urgent transaction goes ahead of those waiting and its batch commits after it, without them', async () => {
  const order: string[] = []
  const a = holdTurn('a')
  const write = (v: string, urgent?: boolean) =>
    db
      .transaction(
        async (tx) => {
          order.push(`${v} ran`)
          await tx.run(sql`insert into t (v) values (${v})`)
        },
        urgent ? { urgent } : undefined,
      )
      .then(() => order.push(`${v} committed`))
  const b = write('b')
  const c = write('c')
  const u1 = write('u1', true)
  const u2 = write('u2', true)
  a.release()
  await Promise.all([a.done, b, c, u1, u2])
  // the urgent ones in the order they came, right after the member in progress; their batch commits
  // before b runs (b and c, waiting longer, take the next batch)
  expect(order).toEqual([
    'u1 ran',
    'u2 ran',
    'u1 committed',
    'u2 committed',
    'b ran',
    'c ran',
    'b committed',
    'c committed',
  ])
  expect(await committed()).toEqual(['a', 'b', 'c', 'u1', 'u2'])
})

test('savepoints repeat their names: the writer prepares no statement per transaction', async () => {
  await insert('warm')
  const before = local.statementsCached.writer
  const first = holdTurn('first')
  const rest = Array.from({ length: 30 }, (_, i) =>
    db.transaction((tx) => tx.savepoint(() => tx.run(sql`insert into t (v) values (${`n${i}`})`))),
  )
  first.release()
  await Promise.all([first.done, ...rest])
  expect((await committed()).length).toBe(32)
  // member and nested savepoints: a handful of texts, not two per transaction
  expect(local.statementsCached.writer - before).toBeLessThan(8)
})

test('with timeouts, a transaction that holds its turn too long is rolled back and the ones behind it go on', async () => {
  const bounded = await tempDatabase('writer-timeouts', {
    writer: { txTimeoutMs: 200, queueTimeoutMs: 5000 },
  })
  try {
    await bounded.db.run(sql`create table t (v text primary key)`)
    const hung = gate()
    const stuck = failure(
      bounded.db.transaction(async (tx) => {
        await tx.run(sql`insert into t (v) values ('stuck')`)
        // waits for something that never comes (a call that hangs), holding the writer's turn
        await hung.opened
        await tx.run(sql`insert into t (v) values ('late')`)
      }),
    )
    const t0 = performance.now()
    await bounded.db.transaction((tx) => tx.run(sql`insert into t (v) values ('next')`))
    expect(performance.now() - t0).toBeLessThan(2000)
    hung.open()
    expect(await stuck).toMatch(/held its turn too long/)
    const rows = await bounded.client.execute('select v from t')
    expect(rows.rows.map((r) => r.v)).toEqual(['next'])
  } finally {
    bounded.close()
  }
})

test('closing the database tells the transactions waiting for their turn and the one that holds it', async () => {
  const closing = await tempDatabase('writer-close')
  const g = gate()
  const holding = closing.db.transaction(async (tx) => {
    await tx.run(sql`create table t (v text)`)
    await g.opened
  })
  const waiting = failure(closing.db.transaction((tx) => tx.run(sql`insert into t (v) values ('w')`)))
  await Bun.sleep(10)
  closing.close()
  expect(await waiting).toBe('the database is closed')
  // the transaction that held the turn goes on after the close: an error, not an abort of the process
  g.open()
  expect(await failure(holding)).toBe('the database is closed')
})
