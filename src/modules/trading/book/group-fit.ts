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

/**
 * Up to `limit` of `symbols` that accounts of one group hold open positions or pending orders in, read in
 * `q`: the market module refuses to hide a group's security group, or stop it trading, while any are
 * (SymbolHoldersPort). One statement, bounded by the brand: the brand's accounts (accounts_brand_group),
 * and for those of the group their open and pending orders only (orders_login_state); `cross join` keeps
 * that order whatever the planner's statistics say (scanning every order, closed history included, of
 * every brand, is what it would otherwise pick).
 */
export async function heldByGroup(
  q: Queryable,
  brandId: number,
  groupId: number,
  symbols: readonly string[],
  limit = 10,
) {
  if (symbols.length === 0) return []
  const rows = await q.all<{ symbol: string }>(
    sql`select distinct o.symbol as symbol from accounts a cross join orders o on o.login = a.login
        where a.brand_id = ${brandId} and a.group_id = ${groupId} and o.state in ('open', 'pending')
          and o.symbol in (select value from json_each(${JSON.stringify(symbols)})) limit ${limit}`,
  )
  return rows.map((r) => r.symbol).sort()
}
