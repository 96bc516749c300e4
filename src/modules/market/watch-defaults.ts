import { inArray } from 'drizzle-orm'
import type { Queryable } from '../../kernel/db/client'
import { marketWatch, symbols } from './schema'

/**
 * Gives a new account its group's starting market watch (in the transaction that opens it), so a
 * terminal's first screen is never blank. Symbols that do not exist are left out; hidden ones are
 * filtered when the list is read, as for any watch list.
 */
export async function seedWatchTx(tx: Queryable, login: number, symbolList: readonly string[]) {
  if (symbolList.length === 0) return
  const known = await tx
    .select({ symbol: symbols.symbol })
    .from(symbols)
    .where(inArray(symbols.symbol, [...symbolList]))
  const exists = new Set(known.map((k) => k.symbol))
  const rows = symbolList.filter((s) => exists.has(s)).map((symbol, i) => ({ login, symbol, sortIndex: i }))
  if (rows.length > 0) await tx.insert(marketWatch).values(rows).onConflictDoNothing()
}
