import type { Client, InStatement, ResultSet, Transaction } from '@libsql/client'
import type { Queryable } from './client'

export interface Driver {
  execute(stmt: InStatement): Promise<ResultSet>
}

/**
 * The libSQL transaction (or client) beneath a drizzle handle, for the statements of hot paths. drizzle's
 * `sql` builder costs about a microsecond per bound parameter, ten times the statement itself for a batch
 * of orders, and its query path allocated three times what the statement did (the funds of a batch of
 * opens: 31 KB against 11 KB). drizzle keeps the driver as `session.tx` inside a transaction and as
 * `session.client` outside; the check fails loudly should that ever change.
 */
export function driverOf(q: Queryable): Driver {
  const session = (q as unknown as { session?: { tx?: Transaction; client?: Client } }).session
  const driver = session?.tx ?? session?.client
  if (typeof driver?.execute !== 'function') throw new Error('drizzle session has no libSQL driver')
  return driver
}
