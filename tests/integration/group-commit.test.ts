import { afterAll, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { GroupCommit } from '../../src/kernel/db/group-commit'
import { tempDatabase } from '../support/database'

// GroupCommit (src/kernel/db/group-commit.ts) on a real libSQL file.
const database = await tempDatabase('gc')
afterAll(() => database.close())
await database.client.execute('create table t (v integer not null check (v >= 0))')

/**
 * One request per event-loop turn, as a server reads them from its sockets: each arrival schedules the
 * next turn before it submits, so the next arrival lands before the committer's own turn runs.
 */
function arrivals(gc: GroupCommit<number, number>, n: number): Promise<number[]> {
  const pending: Promise<number>[] = []
  return new Promise((resolve) => {
    const step = (i: number) => {
      if (i + 1 < n) setImmediate(() => step(i + 1))
      pending.push(gc.submit(i))
      if (i + 1 === n) resolve(Promise.all(pending))
    }
    step(0)
  })
}
const count = async () => Number((await database.client.execute('select count(*) as n from t')).rows[0].n)

/** Inserts each input; a negative one is refused with its own error; 999 makes the whole batch throw. */
function committer(lingerMs?: number) {
  const batches: number[] = []
  const gc = new GroupCommit<number, number>(
    database.db,
    async (tx, inputs) => {
      batches.push(inputs.length)
      const out: (number | Error)[] = []
      for (const v of inputs) {
        if (v === 999) throw new Error('batch failed')
        if (v < 0) out.push(new Error(`refused ${v}`))
        else {
          await tx.run(sql`insert into t (v) values (${v})`)
          out.push(v * 10)
        }
      }
      return out
    },
    { lingerMs },
  )
  return { gc, batches }
}

test('requests of one turn commit as one batch; a refused input fails alone', async () => {
  const { gc, batches } = committer()
  const before = await count()
  const results = await Promise.allSettled([gc.submit(1), gc.submit(-1), gc.submit(2)])
  expect(batches).toEqual([3])
  expect(results[0]).toEqual({ status: 'fulfilled', value: 10 })
  expect(results[1].status).toBe('rejected')
  expect(results[2]).toEqual({ status: 'fulfilled', value: 20 })
  expect(await count()).toBe(before + 2)
})

test('a handler that throws rolls the whole batch back and fails every request of it', async () => {
  const { gc } = committer()
  const before = await count()
  const results = await Promise.allSettled([gc.submit(3), gc.submit(999)])
  expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected'])
  expect(await count()).toBe(before)
})

test('without linger, requests arriving on consecutive turns form several batches', async () => {
  const { gc, batches } = committer(0)
  expect(await arrivals(gc, 5)).toEqual([0, 10, 20, 30, 40])
  expect(batches.length).toBeGreaterThan(1)
})

test('with linger, arrivals on consecutive turns join one batch; a lone request does not wait', async () => {
  const { gc, batches } = committer(1000)
  expect(await arrivals(gc, 5)).toEqual([0, 10, 20, 30, 40])
  expect(batches).toEqual([5])
  const started = performance.now()
  await gc.submit(7)
  expect(performance.now() - started).toBeLessThan(500)
  expect(batches).toEqual([5, 1])
})

/** A committer that, while it commits its first batch, receives one more request (checks finished meanwhile). */
function withRequestDuringCommit() {
  const batches: number[] = []
  const during: { answer?: Promise<number> } = {}
  const gc = new GroupCommit<number, number>(
    database.db,
    async (tx, inputs) => {
      batches.push(inputs.length)
      during.answer ??= gc.submit(100)
      for (const v of inputs) await tx.run(sql`insert into t (v) values (${v})`)
      return inputs.map((v) => v * 10)
    },
    { lingerMs: 1000 },
  )
  return { gc, batches, during }
}

test('under load, a request that comes in while a batch commits joins the next arrivals, not a batch of its own', async () => {
  const { gc, batches, during } = withRequestDuringCommit()
  expect(await Promise.all([gc.submit(1), gc.submit(2)])).toEqual([10, 20])
  // the answers of the first batch bring new requests a moment later (closed-loop clients over the
  // network), arriving on consecutive turns; the leftover waits for them instead of committing alone
  await Bun.sleep(3)
  expect(await arrivals(gc, 3)).toEqual([0, 10, 20])
  expect(await during.answer).toBe(1000)
  expect(batches).toEqual([2, 4])
})

test('in light traffic (the batch was one request), a request that came in during its commit does not linger', async () => {
  const { gc, batches, during } = withRequestDuringCommit()
  expect(await gc.submit(1)).toBe(10)
  const started = performance.now()
  expect(await during.answer).toBe(1000)
  expect(performance.now() - started).toBeLessThan(500)
  expect(batches).toEqual([1, 1])
})
