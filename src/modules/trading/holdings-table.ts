import { sql } from 'drizzle-orm'
import type { Queryable } from '../../kernel/db/client'
import { driverOf } from '../../kernel/db/driver'
import type { Holding } from './domain/holdings'

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

export interface AccountFunds {
  login: number
  balance: number
  credit: number
  leverage: number
  holdings: Holding[]
}

const FUNDS = `
  select json_group_array(json_array(a.login, a.balance, a.credit, a.leverage, h.symbol, h.cmd, h.volume,
                                     printf('%!.17g', h.volume_price), h.commission, h.storage)) as rows
  from accounts a left join holdings h on h.login = a.login and h.volume > 0
  where a.login in (select value from json_each(?))`

/**
 * Balance, credit, leverage and holdings of several logins in one statement (the margin check of opens,
 * bound on the driver: kernel/db/driver).
 * The rows come back as one JSON text: a batch reads dozens of them, and the driver builds every row
 * of a result column by column, which cost more than the query. The one REAL column travels as a
 * 17-digit string, because SQLite writes JSON numbers with 15 significant digits.
 */
export async function fundsOf(q: Queryable, logins: number[]): Promise<Map<number, AccountFunds>> {
  const out = new Map<number, AccountFunds>()
  if (logins.length === 0) return out
  const res = await driverOf(q).execute({ sql: FUNDS, args: [JSON.stringify(logins)] })
  type Row = [number, number, number, number, string | null, number, number, string, number, number]
  for (const [
    login,
    balance,
    credit,
    leverage,
    symbol,
    cmd,
    volume,
    volumePrice,
    commission,
    storage,
  ] of JSON.parse(res.rows[0].rows as string) as Row[]) {
    let f = out.get(login)
    if (!f) {
      f = { login, balance, credit, leverage, holdings: [] }
      out.set(login, f)
    }
    if (symbol !== null)
      f.holdings.push({ symbol, cmd, volume, volumePrice: Number(volumePrice), commission, storage })
  }
  return out
}
