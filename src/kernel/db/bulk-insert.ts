import type { InArgs } from '@libsql/client'
import type { Queryable, Tx } from './client'

type Value = string | number | bigint | null

/** Rows per statement: powers of two, so a table has at most seven statement texts to prepare and cache. */
const CHUNKS = [64, 32, 16, 8, 4, 2, 1]
/** For large batches of narrow rows (a buffer of touches): fewer, larger statements. */
export const LARGE_CHUNKS = [512, 128, 32, 8, 2, 1]
const texts = new Map<string, string>()

function statementText(table: string, columns: readonly string[], rows: number) {
  const key = `${table}\u0000${columns.join(',')}\u0000${rows}`
  let text = texts.get(key)
  if (!text) {
    const row = `(${columns.map(() => '?').join(',')})`
    text = `insert into ${table} (${columns.join(', ')}) values ${Array.from({ length: rows }, () => row).join(',')}`
    texts.set(key, text)
  }
  return text
}

/**
 * Inserts rows (values in the order of `columns`) with multi-row VALUES statements of bound parameters,
 * in order. Returns the rowid of each row: within a write transaction SQLite numbers the rows of one
 * INSERT consecutively, the last being the statement's last insert rowid.
 */
export async function insertRows(
  q: Queryable,
  table: string,
  columns: readonly string[],
  rows: readonly (readonly Value[])[],
  chunks: readonly number[] = CHUNKS,
): Promise<number[]> {
  const ids: number[] = []
  let at = 0
  while (at < rows.length) {
    const n = chunks.find((c) => c <= rows.length - at)!
    const args: Value[] = []
    for (let i = at; i < at + n; i++) {
      const r = rows[i]
      if (r.length !== columns.length)
        throw new Error(`row ${i} has ${r.length} values for ${columns.length} columns`)
      for (const v of r) args.push(v)
    }
    const res = await q.execute({ sql: statementText(table, columns, n), args: args as InArgs })
    if (res.rowsAffected !== n || res.lastInsertRowid === undefined)
      throw new Error(`insert into ${table} wrote ${res.rowsAffected} of ${n} rows`)
    const last = Number(res.lastInsertRowid)
    for (let i = n - 1; i >= 0; i--) ids.push(last - i)
    at += n
  }
  return ids
}

/**
 * The same rows, for a transaction that reads nothing back: each statement rides with the transaction's
 * next round trip where the driver can (a remote database: no round trip of its own; a failure then
 * fails the batch at its next statement or its commit), else runs now.
 */
export async function deferRows(
  tx: Tx,
  table: string,
  columns: readonly string[],
  rows: readonly (readonly Value[])[],
): Promise<void> {
  let at = 0
  while (at < rows.length) {
    const n = CHUNKS.find((c) => c <= rows.length - at)!
    const args: (string | number | null)[] = []
    for (let i = at; i < at + n; i++) {
      const r = rows[i]
      if (r.length !== columns.length)
        throw new Error(`row ${i} has ${r.length} values for ${columns.length} columns`)
      for (const v of r) args.push(typeof v === 'bigint' ? Number(v) : v)
    }
    await tx.deferred(statementText(table, columns, n), args)
    at += n
  }
}
