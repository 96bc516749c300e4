import type { InArgs, InStatement, ResultSet } from '@libsql/client'
import type { Queryable } from './client'

/**
 * The rows of a query that selects them as one JSON text, `select json_group_array(json_array(…)) as
 * rows …`, each row an array of its columns in order. The driver builds every row of a result column by
 * column: at thousands of rows (an evaluator's pass, a batch of opens) one text cost a fraction of it.
 */
export async function jsonRows<Row extends unknown[]>(
  q: Queryable,
  sql: string,
  args: InArgs,
): Promise<Row[]> {
  const read = jsonRead<Row>(sql, args)
  return read.parse(await q.execute(read.stmt))
}

/**
 * A read as its statement and how its answer is read, so a caller can send it in one round trip with
 * reads of its own (Queryable.readAll) while the module that owns the table keeps its SQL.
 */
export interface PreparedRead<T> {
  stmt: InStatement
  parse(res: ResultSet): T
}

/** `jsonRows` as a PreparedRead. */
export function jsonRead<Row extends unknown[]>(sql: string, args: InArgs): PreparedRead<Row[]> {
  return { stmt: { sql, args }, parse: (res) => JSON.parse(res.rows[0]!.rows as string) as Row[] }
}
