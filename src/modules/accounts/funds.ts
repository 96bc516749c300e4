import type { Queryable } from '../../kernel/db/client'
import { jsonRead, jsonRows, type PreparedRead } from '../../kernel/db/json-rows'

export interface Funds {
  login: number
  /** Minor units of the account currency. */
  balance: number
  credit: number
  leverage: number
  groupId: number
  /** Enabled and not read-only: it may take new positions (a pending order's activation reads it here). */
  tradeAllowed: boolean
  /** Open positions and pending orders it may hold together; 0: no limit. */
  maxPositions: number
}

const FUNDS = `
  select json_group_array(json_array(login, balance, credit, leverage, group_id,
    enable = 1 and enable_read_only = 0, max_positions)) as rows
  from accounts where login in (select value from json_each(?))`

/**
 * Balance, credit, leverage, group, whether they may trade and their position limit, of several logins in one statement, in the caller's transaction (the
 * margin check of a batch of opens reads them where it writes). The rows come back as one JSON text: the
 * driver builds every row of a result column by column, which cost more than the query.
 */
export async function fundsOf(q: Queryable, logins: readonly number[]): Promise<Map<number, Funds>> {
  if (logins.length === 0) return new Map()
  const read = fundsRead(logins)
  return read.parse(await q.execute(read.stmt))
}

/** `fundsOf` as a read the caller sends, with reads of its own, in one round trip (Queryable.readAll). */
export function fundsRead(logins: readonly number[]): PreparedRead<Map<number, Funds>> {
  const rows = jsonRead<[number, number, number, number, number, number, number]>(FUNDS, [
    JSON.stringify(logins),
  ])
  return {
    stmt: rows.stmt,
    parse(res) {
      const out = new Map<number, Funds>()
      for (const [login, balance, credit, leverage, groupId, allowed, maxPositions] of rows.parse(res))
        out.set(login, {
          login,
          balance,
          credit,
          leverage,
          groupId,
          tradeAllowed: allowed === 1,
          maxPositions,
        })
      return out
    },
  }
}

/** The group of each login (logins that do not exist are left out). */
export async function groupIdsOf(q: Queryable, logins: readonly number[]): Promise<Map<number, number>> {
  const out = new Map<number, number>()
  for (let i = 0; i < logins.length; i += 5000) {
    const rows = await jsonRows<[number, number]>(
      q,
      `select json_group_array(json_array(login, group_id)) as rows from accounts
       where login in (select value from json_each(?))`,
      [JSON.stringify(logins.slice(i, i + 5000))],
    )
    for (const [login, group] of rows) out.set(login, group)
  }
  return out
}

/**
 * The logins of a brand's group, read in `q` (the caller's transaction) by `accounts_brand_group`: another
 * module's check of what a group's accounts hold (trading's heldByGroup, for market's hide of a security
 * group) reads them here, never the accounts table itself.
 */
export async function loginsOfGroup(q: Queryable, brandId: number, groupId: number): Promise<number[]> {
  const res = await q.execute({
    sql: 'select json_group_array(login) as rows from accounts where brand_id = ? and group_id = ?',
    args: [brandId, groupId],
  })
  return JSON.parse(res.rows[0]!.rows as string) as number[]
}
