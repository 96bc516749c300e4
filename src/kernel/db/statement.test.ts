import { expect, test } from 'bun:test'
import type { ResultSet } from '@libsql/client'
import { and, eq, sql } from 'drizzle-orm'
import { integer, sqliteTable, text } from 'drizzle-orm/sqlite-core'
import type { Queryable } from './db'
import { rowsOf, statement } from './statement'

const things = sqliteTable('things', {
  id: integer('id').primaryKey({ autoIncrement: true }),
  name: text('name').notNull(),
  flag: integer('flag', { mode: 'boolean' }).notNull(),
  tags: text('tags', { mode: 'json' }).$type<string[]>(),
})

/** A handle that records what it was asked to run (the statement's text and arguments). */
function recorder() {
  const runs: { sql: string; args: unknown[] }[] = []
  const q = {
    execute: async (s: { sql: string; args: unknown[] }) => {
      runs.push(s)
      return { rows: [], columns: [], columnTypes: [], rowsAffected: 0 } as unknown as ResultSet
    },
  } as unknown as Queryable
  return { q, runs }
}

test('built once, run with new values; constants and column encodings kept', async () => {
  const { q, runs } = recorder()
  let builds = 0
  const update = statement((qb) => {
    builds++
    return qb
      .update(things)
      .set({ flag: sql.placeholder('flag') as never, tags: sql.placeholder('tags') as never })
      .where(and(eq(things.id, sql.placeholder('id')), eq(things.name, 'fixed')))
  })
  await update(q, { flag: true, tags: ['a'], id: 7 })
  await update(q, { flag: false, tags: null, id: 8 })
  expect(builds).toBe(1)
  expect(runs[0]!.sql).toBe(runs[1]!.sql)
  // the boolean column stores 1/0 and the json column text, as drizzle would write them
  expect(runs[0]!.args).toEqual([1, '["a"]', 7, 'fixed'])
  expect(runs[1]!.args).toEqual([0, null, 8, 'fixed'])
})

test('rows of a table as drizzle maps them', () => {
  const rs = {
    rows: [
      { id: 1, name: 'a', flag: 1, tags: '["x"]' },
      { id: 2, name: 'b', flag: 0, tags: null },
    ],
  } as unknown as ResultSet
  expect(rowsOf(things, rs)).toEqual([
    { id: 1, name: 'a', flag: true, tags: ['x'] },
    { id: 2, name: 'b', flag: false, tags: null },
  ])
})
