import type { InArgs } from '@libsql/client'
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
  const res = await q.execute({ sql, args })
  return JSON.parse(res.rows[0]!.rows as string) as Row[]
}
