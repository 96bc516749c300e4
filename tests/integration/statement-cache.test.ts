import { afterAll, expect, test } from 'bun:test'
import Database from 'libsql'
import { tempDatabase } from '../support/database'

// The cache of prepared statements (src/kernel/db/statement-cache.ts) on a real libSQL file.
const database = await tempDatabase('stmt')
const { client } = database
afterAll(() => database.close())
await client.execute('create table t (id integer primary key, v text not null unique)')

test('a connection hands out one prepared statement per SQL text', () => {
  const raw = new Database(database.file)
  expect(raw.prepare('select 1')).toBe(raw.prepare('select 1'))
  expect(raw.prepare('select 1')).not.toBe(raw.prepare('select 2'))
  raw.close()
})

test('a statement that failed runs again cleanly', async () => {
  await client.execute({ sql: 'insert into t (v) values (?)', args: ['a'] })
  await expect(client.execute({ sql: 'insert into t (v) values (?)', args: ['a'] })).rejects.toThrow(/UNIQUE/)
  const r = await client.execute({ sql: 'insert into t (v) values (?)', args: ['b'] })
  expect(r.rowsAffected).toBe(1)
  expect(Number(r.lastInsertRowid)).toBe(2)
})

test('a cached query sees rows written after its last run, in and out of transactions', async () => {
  const read = () => client.execute('select v from t order by id').then((r) => r.rows.map((x) => x.v))
  expect(await read()).toEqual(['a', 'b'])
  const tx = await client.transaction('write')
  await tx.execute({ sql: 'insert into t (v) values (?)', args: ['c'] })
  expect((await tx.execute('select v from t order by id')).rows.map((x) => x.v)).toEqual(['a', 'b', 'c'])
  await tx.rollback()
  expect(await read()).toEqual(['a', 'b'])
  await client.execute({ sql: 'insert into t (v) values (?)', args: ['d'] })
  expect(await read()).toEqual(['a', 'b', 'd'])
})

test('a cached statement follows a schema change', async () => {
  const all = () => client.execute('select * from t order by id').then((r) => r.columns)
  expect(await all()).toEqual(['id', 'v'])
  await client.execute('alter table t add column w integer not null default 7')
  expect(await all()).toEqual(['id', 'v', 'w'])
})
