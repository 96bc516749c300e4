import { sql } from 'drizzle-orm'
import type { Queryable } from '../../../kernel/db/client'
import { jsonRead } from '../../../kernel/db/json-rows'
import type { AccountsApi, Funds } from '../../accounts'
import type { Holding } from '../domain/holdings'

/**
 * Holdings of several logins (one row per login, symbol and direction with volume). The `holdings` table
 * is kept by triggers on `orders` (drizzle/0002_holdings.sql), so no write path can forget it.
 */
export async function holdingsOf(q: Queryable, logins: number[]): Promise<Map<number, Holding[]>> {
  const out = new Map<number, Holding[]>(logins.map((l) => [l, []]))
  if (logins.length === 0) return out
  const rows = await q.all<Holding & { login: number }>(sql`
    select login, symbol, cmd, volume, volume_price as volumePrice, commission, storage
    from holdings where login in (select value from json_each(${JSON.stringify(logins)})) and volume > 0`)
  for (const { login, ...h } of rows) out.get(login)?.push(h)
  return out
}

interface AccountFunds extends Funds {
  holdings: Holding[]
}

const HOLDINGS = `
  select json_group_array(json_array(login, symbol, cmd, volume, printf('%!.17g', volume_price), commission, storage))
    as rows
  from holdings where login in (select value from json_each(?)) and volume > 0`

/**
 * Balance, credit, leverage (from the accounts module) and holdings of several logins, in the caller's
 * transaction, read together: the margin check of a batch of opens. The holdings come back as one JSON text (the driver
 * builds every row of a result column by column, which cost more than the query); the one REAL column
 * travels as a 17-digit string, because SQLite writes JSON numbers with 15 significant digits.
 */
export async function fundsOf(
  accounts: Pick<AccountsApi, 'fundsRead'>,
  q: Queryable,
  logins: number[],
): Promise<Map<number, AccountFunds>> {
  const out = new Map<number, AccountFunds>()
  if (logins.length === 0) return out
  type Row = [number, string, number, number, string, number, number]
  // the accounts' read and the holdings' in one round trip: a remote database's write lock is held across
  // the round trips of the transaction (a batch of opens, a trigger's close)
  const funds = accounts.fundsRead(logins)
  const holdings = jsonRead<Row>(HOLDINGS, [JSON.stringify(logins)])
  const [f, h] = await q.readAll([funds.stmt, holdings.stmt])
  for (const [login, a] of funds.parse(f!)) out.set(login, { ...a, holdings: [] })
  for (const [login, symbol, cmd, volume, volumePrice, commission, storage] of holdings.parse(h!))
    out
      .get(login)
      ?.holdings.push({ symbol, cmd, volume, volumePrice: Number(volumePrice), commission, storage })
  return out
}
