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

type Positions = Map<number, { openTime: number; closeTime: number }[]>

/**
 * The rows of a positions statement (?1 the logins as a JSON array, ?2 an instant) by login, 2,000 logins
 * a statement, each answer one JSON text (the evaluator's pass reads 10,000 logins' positions).
 */
async function positionsBy(db: Db, statement: string, logins: number[], since: number): Promise<Positions> {
  const out: Positions = new Map()
  for (let i = 0; i < logins.length; i += CHUNK) {
    const rows = await jsonRows<[number, number, number]>(db, statement, [
      JSON.stringify(logins.slice(i, i + CHUNK)),
      since,
    ])
    for (const [login, openTime, closeTime] of rows) {
      const list = out.get(login)
      if (list) list.push({ openTime, closeTime })
      else out.set(login, [{ openTime, closeTime }])
    }
  }
  return out
}

const POSITIONS_SINCE = `select json_group_array(json_array(login, open_time, close_time)) as rows from orders
  where login in (select value from json_each(?1))
    and cmd in (0, 1) and state in ('open', 'closed') and parent is null and open_time >= ?2`

/** Positions (not pending orders, not the closed parts of a partial close) of many logins opened since `since`. */
export const positionsOf = (db: Db, logins: number[], since: number) =>
  positionsBy(db, POSITIONS_SINCE, logins, since)

// each part by its index: `orders_login_state` for the open ones, the partial `orders_history` for the
// closed (its condition written out, so SQLite can tell that it holds)
export const RECENT_POSITIONS = `select json_group_array(json_array(login, open_time, close_time)) as rows from (
  select login, open_time, close_time from orders
    where login in (select value from json_each(?1)) and state = 'open' and cmd in (0, 1) and parent is null
  union all
  select login, open_time, close_time from orders
    where login in (select value from json_each(?1)) and state in ('closed', 'cancelled', 'expired')
      and state = 'closed' and close_time >= ?2 and cmd in (0, 1) and parent is null)`

/**
 * The open positions of many logins, and their positions closed since `since` (opened then or before):
 * an evaluator's pass over phases it counted within the last 26 hours, which needs the activity since and
 * the positions still open, not every position since the phase began (40 rows a pass for a phase 40
 * positions into its challenge).
 */
export const recentPositionsOf = (db: Db, logins: number[], since: number) =>
  positionsBy(db, RECENT_POSITIONS, logins, since)
