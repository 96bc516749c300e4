import type { Queryable } from '../../kernel/db/client'

export interface Funds {
  login: number
  /** Minor units of the account currency. */
  balance: number
  credit: number
  leverage: number
}

const FUNDS = `
  select json_group_array(json_array(login, balance, credit, leverage)) as rows
  from accounts where login in (select value from json_each(?))`

/**
 * Balance, credit and leverage of several logins in one statement, in the caller's transaction (the
 * margin check of a batch of opens reads them where it writes). The rows come back as one JSON text: the
 * driver builds every row of a result column by column, which cost more than the query.
 */
export async function fundsOf(q: Queryable, logins: readonly number[]): Promise<Map<number, Funds>> {
  const out = new Map<number, Funds>()
  if (logins.length === 0) return out
  const res = await q.execute({ sql: FUNDS, args: [JSON.stringify(logins)] })
  for (const [login, balance, credit, leverage] of JSON.parse(res.rows[0].rows as string) as number[][])
    out.set(login, { login, balance, credit, leverage })
  return out
}

/** The group of each login (logins that do not exist are left out). */
export async function groupIdsOf(q: Queryable, logins: readonly number[]): Promise<Map<number, number>> {
  const out = new Map<number, number>()
  for (let i = 0; i < logins.length; i += 5000) {
    const res = await q.execute({
      sql: `select json_group_array(json_array(login, group_id)) as rows from accounts
            where login in (select value from json_each(?))`,
      args: [JSON.stringify(logins.slice(i, i + 5000))],
    })
    for (const [login, group] of JSON.parse(res.rows[0].rows as string) as number[][]) out.set(login, group)
  }
  return out
}
