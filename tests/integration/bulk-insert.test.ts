import { afterAll, expect, test } from 'bun:test'
import { insertRows } from '../../src/kernel/db/bulk-insert'
import { tempDatabase } from '../support/database'

// Multi-row inserts bound on the libSQL driver beneath drizzle (src/kernel/db/bulk-insert.ts).
const database = await tempDatabase('bulk')
const { client, db } = database
afterAll(() => database.close())
await client.execute(
  'create table t (id integer primary key autoincrement, k integer not null, v text, r real not null)',
)
const read = async () =>
  (await client.execute('select id, k, v, r from t order by id')).rows.map((x) => [x.id, x.k, x.v, x.r])

test('rows keep their order and values; the returned ids are theirs, across chunk sizes', async () => {
  // 0, 1, 50 (32+16+2), 130 (64+64+2) rows, in one transaction as the group commit does
  const batches = [0, 1, 50, 130].map((n, b) =>
    Array.from({ length: n }, (_, i) => [b * 1000 + i, `it's "row" ${i}; drop table t`, i + 0.1] as const),
  )
  const ids = await db.transaction(async (tx) => {
    const out: number[][] = []
    for (const rows of batches) out.push(await insertRows(tx, 't', ['k', 'v', 'r'], rows))
    return out
  })
  expect(ids.map((x) => x.length)).toEqual([0, 1, 50, 130])
  const stored = await read()
  const byId = new Map(stored.map((s) => [s[0], s]))
  batches.forEach((rows, b) => {
    rows.forEach((row, i) => {
      expect(byId.get(ids[b][i])).toEqual([ids[b][i], ...row])
    })
  })
  expect(stored.map((s) => s[1])).toEqual(batches.flat().map((r) => r[0]))
})

test('outside a transaction too, with nulls', async () => {
  const [id] = await insertRows(db, 't', ['k', 'v', 'r'], [[7, null, 1.5]])
  expect((await read()).at(-1)).toEqual([id, 7, null, 1.5])
})

test('a bad row fails the statement and the transaction writes nothing', async () => {
  const before = await read()
  await expect(
    db.transaction(async (tx) => {
      await insertRows(tx, 't', ['k', 'v', 'r'], [[1, 'a', 1]])
      await insertRows(
        tx,
        't',
        ['k', 'v', 'r'],
        [
          [2, 'b', 2],
          [3, 'c'],
        ],
      )
    }),
  ).rejects.toThrow(/row 1 has 2 values for 3 columns/)
  await expect(
    db.transaction(async (tx) => {
      await insertRows(tx, 't', ['k', 'v', 'r'], [[4, 'd', 4]])
      await insertRows(tx, 't', ['k', 'v', 'r'], [[null, 'e', 5]])
    }),
  ).rejects.toThrow(/NOT NULL/)
  expect(await read()).toEqual(before)
})
