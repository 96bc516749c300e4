import { afterAll, expect, test } from 'bun:test'
import type { LocalClient } from '../../src/kernel/db/local/client'
import { tempDatabase } from '../support/database'

// The local adapter's libSQL client (src/kernel/db/local/client.ts) on a real file: what @libsql/client
// does for a file, plus a prepared-statement cache per connection (ADR 0004).
const database = await tempDatabase('local')
const { client } = database
const local = client as unknown as LocalClient
afterAll(() => database.close())
await client.execute('create table t (id integer primary key, v text not null unique, n integer)')

test('a connection prepares a SQL text once, whatever the arguments', async () => {
  const before = local.statementsCached.reader
  for (let i = 0; i < 50; i++) await client.execute({ sql: 'select ? + 1 as x', args: [i] })
  expect((await client.execute({ sql: 'select ? + 1 as x', args: [41] })).rows[0].x).toBe(42)
  expect(local.statementsCached.reader).toBe(before + 1)
})

test('rows as @libsql/client shapes them: positions and (enumerable) column names', async () => {
  await client.execute({ sql: 'insert into t (v, n) values (?, ?)', args: ['row', 5] })
  const r = await client.execute("select id, v, n from t where v = 'row'")
  const row = r.rows[0]
  expect([row[1], row.v, row.n, row.length]).toEqual(['row', 'row', 5, 3])
  expect(Object.keys(row)).toEqual(['id', 'v', 'n'])
  expect(r.columns).toEqual(['id', 'v', 'n'])
  await client.execute("delete from t where v = 'row'")
})

test('a name that repeats: each position keeps its own value, the name the first one', async () => {
  const r = await client.execute("select 1 as a, 2 as a, 'x' as b")
  const row = r.rows[0]
  expect([row[0], row[1], row[2], row.a, row.b, row.length]).toEqual([1, 2, 'x', 1, 'x', 3])
  expect(Object.keys(row)).toEqual(['a', 'b'])
  expect(JSON.stringify(row)).toBe('{"a":1,"b":"x"}')
  expect(Array.prototype.slice.call(row)).toEqual([1, 2, 'x'])
})

test('a column named like a position or the length leaves both intact', async () => {
  const row = (await client.execute('select 5 as length, 7 as "0", 9 as v')).rows[0]
  expect([row[0], row[1], row[2], row.length, row.v]).toEqual([5, 7, 9, 3, 9])
})

test('an integer beyond 2^53 - 1 is refused as @libsql/client refuses it (RangeError)', async () => {
  await expect(client.execute('select 9007199254740993 as big')).rejects.toThrow(RangeError)
  expect((await client.execute('select 9007199254740991 as ok')).rows[0].ok).toBe(9007199254740991)
})

test('a statement that failed runs again cleanly', async () => {
  await client.execute({ sql: 'insert into t (v) values (?)', args: ['a'] })
  await expect(client.execute({ sql: 'insert into t (v) values (?)', args: ['a'] })).rejects.toThrow(/UNIQUE/)
  const r = await client.execute({ sql: 'insert into t (v) values (?)', args: ['b'] })
  expect(r.rowsAffected).toBe(1)
  expect(Number(r.lastInsertRowid)).toBeGreaterThan(0)
})

test('a cached query sees rows written after its last run, in and out of transactions', async () => {
  const read = () => client.execute('select v from t order by id').then((r) => r.rows.map((x) => x.v))
  expect(await read()).toEqual(['a', 'b'])
  const tx = await client.transaction('write')
  await tx.execute({ sql: 'insert into t (v) values (?)', args: ['c'] })
  expect((await tx.execute('select v from t order by id')).rows.map((x) => x.v)).toEqual(['a', 'b', 'c'])
  // the reader connection does not see the open transaction's rows
  expect(await read()).toEqual(['a', 'b'])
  // one writer: a second transaction, or a write outside one, waits its turn (it would block the thread
  // on SQLite's lock if it ran on another connection)
  let secondBegan = false
  const second = client.transaction('write').then((t2) => {
    secondBegan = true
    return t2
  })
  const bare = client.execute({ sql: 'insert into t (v) values (?)', args: ['d'] })
  await Bun.sleep(20)
  expect(secondBegan).toBe(false)
  await tx.rollback()
  const t2 = await second
  await t2.execute({ sql: 'insert into t (v) values (?)', args: ['e'] })
  await t2.commit()
  expect((await bare).rowsAffected).toBe(1)
  expect(await read()).toEqual(['a', 'b', 'e', 'd'])
})

test('a cached statement follows a schema change', async () => {
  const all = () => client.execute('select * from t order by id').then((r) => r.columns)
  expect(await all()).toEqual(['id', 'v', 'n'])
  await client.execute('alter table t add column w integer not null default 7')
  expect(await all()).toEqual(['id', 'v', 'n', 'w'])
})

test('both connections run with the settings (WAL, synchronous NORMAL, busy timeout, page cache)', async () => {
  const tx = await client.transaction('write')
  const onWriter = async (p: string) => (await tx.execute(`PRAGMA ${p}`)).rows[0][0]
  const onReader = async (p: string) => (await client.execute(`PRAGMA ${p}`)).rows[0][0]
  for (const get of [onWriter, onReader]) {
    expect(await get('journal_mode')).toBe('wal')
    expect(await get('synchronous')).toBe(1)
    expect(await get('busy_timeout')).toBe(5000)
    expect(await get('cache_size')).toBe(-64 * 1024)
  }
  await tx.rollback()
})
