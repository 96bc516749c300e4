import { sql } from 'drizzle-orm'
import type { Queryable } from '../../../kernel/db/client'
import type { TradingCtx } from '../context'

/** The symbols of the open positions and pending orders of a login, or of every login in one symbol. */
const LIVE = sql`state in ('open', 'pending')`

/**
 * The symbols `login` holds open positions or pending orders in that the group could not price and trade
 * (no settings for their security group, hidden or not tradable there), the orders read in `q`: the
 * accounts module refuses a group move to such a group (GroupFitPort).
 */
export async function unfitSymbols(ctx: TradingCtx, q: Queryable, login: number, groupId: number) {
  const rows = await q.all<{ symbol: string }>(
    sql`select distinct symbol from orders where login = ${login} and ${LIVE} order by symbol`,
  )
  if (rows.length === 0) return []
  const symbols = await ctx.refdata.snapshot([groupId])
  return rows
    .map((r) => r.symbol)
    .filter((s) => {
      const sec = symbols(groupId, s)?.sec
      return sec?.show !== 1 || sec.trade !== 1
    })
}

/**
 * The groups of the accounts holding open positions or pending orders in `symbol`, read in `q`: the market
 * module refuses to move the symbol to a security group one of them has no settings for (SymbolHoldersPort).
 */
export async function holderGroups(ctx: TradingCtx, q: Queryable, symbol: string) {
  const rows = await q.all<{ login: number }>(
    sql`select distinct login from orders where symbol = ${symbol} and ${LIVE}`,
  )
  if (rows.length === 0) return []
  return [
    ...new Set(
      (
        await ctx.accounts.groupIdsOf(
          q,
          rows.map((r) => r.login),
        )
      ).values(),
    ),
  ]
}

const LOGINS_PER_READ = 5000

/**
 * Up to `limit` of `symbols` that accounts of one group hold open positions or pending orders in, read in
 * `q`: the market module refuses to hide a group's security group, or stop it trading, while any are
 * (SymbolHoldersPort). The group's logins come from the accounts module (its port, by
 * `accounts_brand_group`, bounded by the brand), then their open and pending orders only, by
 * `orders_login_state` (never the closed history, nor another brand's orders). A hide is a rare admin
 * action: reading a large group's logins is acceptable; they go in batches of LOGINS_PER_READ.
 */
export async function heldByGroup(
  ctx: Pick<TradingCtx, 'accounts'>,
  q: Queryable,
  brandId: number,
  groupId: number,
  symbols: readonly string[],
  limit = 10,
) {
  if (symbols.length === 0) return []
  const logins = await ctx.accounts.loginsOfGroup(q, brandId, groupId)
  const held = new Set<string>()
  for (let i = 0; i < logins.length && held.size < limit; i += LOGINS_PER_READ) {
    const rest = symbols.filter((s) => !held.has(s))
    if (rest.length === 0) break
    const rows = await q.all<{ symbol: string }>(
      sql`select distinct symbol from orders
          where login in (select value from json_each(${JSON.stringify(logins.slice(i, i + LOGINS_PER_READ))}))
            and ${LIVE} and symbol in (select value from json_each(${JSON.stringify(rest)}))
          limit ${limit - held.size}`,
    )
    for (const r of rows) held.add(r.symbol)
  }
  return [...held].sort()
}
