import type { InValue, ResultSet } from '@libsql/client'
import {
  type Column,
  getTableColumns,
  inArray,
  is,
  Param,
  Placeholder,
  type SQL,
  sql,
  type Table,
} from 'drizzle-orm'
import { drizzle } from 'drizzle-orm/libsql/web'
import type { Queryable } from './db'

/** Builds statements' text only: it never runs one (a query built here is handed to a real handle). */
const builder = drizzle({
  execute: () => Promise.reject(new Error('the statement builder runs nothing')),
} as never)
export type StatementBuilder = typeof builder

interface Compiled {
  sql: string
  params: unknown[]
}

/**
 * A statement drizzle builds once, with `sql.placeholder(name)` where its values go, then runs on any
 * handle (the database or a transaction) with new values. drizzle rebuilds a query's text on every call
 * (about 70 µs for a select or an UPDATE … RETURNING of twenty columns, more than SQLite takes to run it):
 * for the statements of a hot path, once is enough.
 */
export function statement<V extends Record<string, unknown>>(
  build: (qb: StatementBuilder) => { toSQL(): Compiled },
) {
  let compiled: { sql: string; args: ((values: Record<string, unknown>) => InValue)[] } | undefined
  return (q: Queryable, values: V): Promise<ResultSet> => {
    if (!compiled) {
      const c = build(builder).toSQL()
      compiled = { sql: c.sql, args: c.params.map(argument) }
    }
    const args = compiled.args.map((a) => a(values))
    return q.execute({ sql: compiled.sql, args })
  }
}

/**
 * `column in (…)` over a placeholder that receives a JSON array: one statement text for a list of any
 * length (a list of bound values is a new text, built and prepared again, for every length).
 */
export const inJsonArray = (column: Column, placeholder: string): SQL =>
  inArray(column, sql`(select value from json_each(${sql.placeholder(placeholder)}))`)

/**
 * How a parameter of the built text gets its value, worked out once per statement: drizzle's `is` walks
 * a class chain, once per parameter per execution before.
 */
function argument(p: unknown): (values: Record<string, unknown>) => InValue {
  if (is(p, Placeholder)) {
    const name = p.name
    return (values) => (values[name] ?? null) as InValue
  }
  if (is(p, Param)) {
    const encoder = p.encoder as { mapToDriverValue?: (v: unknown) => unknown } | undefined
    const encode = encoder?.mapToDriverValue
      ? (v: unknown) => encoder.mapToDriverValue!(v)
      : (v: unknown) => v
    const value = p.value
    const name = is(value, Placeholder) ? value.name : null
    return (values) => {
      const v = name === null ? value : values[name]
      return v === null || v === undefined ? null : (encode(v) as InValue)
    }
  }
  return () => p as InValue
}

const mappers = new WeakMap<Table, [string, Column][]>()

/** The rows of a statement that reads or returns whole rows of `table`, as drizzle would map them. */
export function rowsOf<T extends Table>(table: T, rs: ResultSet): T['$inferSelect'][] {
  let columns = mappers.get(table)
  if (!columns) {
    columns = Object.entries(getTableColumns(table) as Record<string, Column>)
    mappers.set(table, columns)
  }
  return rs.rows.map((r) => {
    const row: Record<string, unknown> = {}
    for (const [field, column] of columns) {
      const v = (r as unknown as Record<string, unknown>)[column.name]
      row[field] = v === null || v === undefined ? null : column.mapFromDriverValue(v)
    }
    return row as T['$inferSelect']
  })
}
