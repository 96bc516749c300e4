import type { Db } from '../../../kernel/db/client'
import { jsonRows } from '../../../kernel/db/json-rows'
import { roundToMinor } from '../../accounts'
import type { TradingCtx } from '../context'
import { marginOf, pricing } from './exposure'
import { fundsOf } from './holdings-table'

const CHUNK = 2000

/**
 * Balance and equity (minor units) of many logins in a few statements: their funds, groups and holdings in
 * two reads per chunk, priced at the quotes now (an evaluator's pass over thousands of accounts).
 */
export async function accountFigures(ctx: TradingCtx, logins: number[]) {
  const out = new Map<number, { balance: number; equity: number } | null>()
  for (let i = 0; i < logins.length; i += CHUNK) {
    const chunk = logins.slice(i, i + CHUNK)
    const funds = await fundsOf(ctx.accounts, ctx.db, chunk)
    const ids = [...new Set([...funds.values()].map((f) => f.groupId))]
    const [p, groups] = await Promise.all([
      pricing(ctx, new Set(ids)),
      Promise.all(ids.map(async (id) => [id, await ctx.accountsRead.group(id)] as const)).then(
        (g) => new Map(g),
      ),
    ])
    for (const [login, f] of funds) {
      const group = groups.get(f.groupId)
      const m = group && marginOf(p, f, group, f.holdings)
      out.set(
        login,
        m && group ? { balance: f.balance, equity: roundToMinor(m.equity, group.currency) } : null,
      )
    }
  }
  return out
}

/** Positions (not pending orders, not the closed parts of a partial close) of many logins opened since `since`. */
export async function positionsOf(db: Db, logins: number[], since: number) {
  const out = new Map<number, { openTime: number; closeTime: number }[]>()
  for (let i = 0; i < logins.length; i += CHUNK) {
    // one JSON text (the evaluator's pass reads 10,000 logins' positions)
    const rows = await jsonRows<[number, number, number]>(
      db,
      `select json_group_array(json_array(login, open_time, close_time)) as rows from orders
        where login in (select value from json_each(?))
          and cmd in (0, 1) and state in ('open', 'closed') and parent is null and open_time >= ?`,
      [JSON.stringify(logins.slice(i, i + CHUNK)), since],
    )
    for (const [login, openTime, closeTime] of rows) {
      const list = out.get(login)
      if (list) list.push({ openTime, closeTime })
      else out.set(login, [{ openTime, closeTime }])
    }
  }
  return out
}
