import { sql } from 'drizzle-orm'
import type { Queryable } from '../../platform/db/client'
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

/** Balance, credit, leverage and holdings of several logins in one statement (the margin check of opens). */
export async function fundsOf(q: Queryable, logins: number[]): Promise<Map<number, AccountFunds>> {
  const out = new Map<number, AccountFunds>()
  if (logins.length === 0) return out
  const rows = await q.all<{
    login: number
    balance: number
    credit: number
    leverage: number
    symbol: string | null
    cmd: number
    volume: number
    volumePrice: number
    commission: number
    storage: number
  }>(sql`
    select a.login, a.balance, a.credit, a.leverage, h.symbol, h.cmd, h.volume,
           h.volume_price as volumePrice, h.commission, h.storage
    from accounts a left join holdings h on h.login = a.login and h.volume > 0
    where a.login in (select value from json_each(${JSON.stringify(logins)}))`)
  for (const r of rows) {
    let f = out.get(r.login)
    if (!f) {
      f = { login: r.login, balance: r.balance, credit: r.credit, leverage: r.leverage, holdings: [] }
      out.set(r.login, f)
    }
    if (r.symbol !== null)
      f.holdings.push({
        symbol: r.symbol,
        cmd: r.cmd,
        volume: r.volume,
        volumePrice: r.volumePrice,
        commission: r.commission,
        storage: r.storage,
      })
  }
  return out
}
