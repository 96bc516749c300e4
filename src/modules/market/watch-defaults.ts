import { eq, inArray } from 'drizzle-orm'
import type { Brand } from '../../kernel/brand/registry'
import type { Tx } from '../../kernel/db/client'
import type { Consumer, PayloadOf } from '../../kernel/events/topic'
import { invalid } from '../../kernel/http/errors'
import { AccountCreated } from '../accounts'
import type { MarketCtx } from './context'
import { refuse } from './errors'
import { groupWatchDefaults, marketWatch, symbols } from './schema'

/** What a new account's market watch shows when its group names no list of its own. */
export const STARTER_WATCH = [
  'EURUSD',
  'GBPUSD',
  'USDJPY',
  'AUDUSD',
  'USDCAD',
  'XAUUSD',
  'XTIUSD',
  'US500',
  'NAS100',
  'BTCUSD',
] as const

async function defaultsOf(tx: Tx | MarketCtx['db'], groupId: number): Promise<string[]> {
  const [row] = await tx.select().from(groupWatchDefaults).where(eq(groupWatchDefaults.groupId, groupId))
  return row ? (JSON.parse(row.symbols) as string[]) : [...STARTER_WATCH]
}

/**
 * Gives a new account its group's starting market watch, so a terminal's first screen is never blank:
 * a consumer of `account.created`. Idempotent (the watch's primary key); symbols that do not exist are
 * left out, hidden ones are filtered when the list is read, as for any watch list.
 */
export function watchConsumer(): Consumer<PayloadOf<typeof AccountCreated>> {
  return {
    name: 'market.watch-of-new-account',
    topic: AccountCreated,
    async handle(event, tx) {
      const list = await defaultsOf(tx, event.payload.group_id)
      if (list.length === 0) return
      const known = await tx
        .select({ symbol: symbols.symbol })
        .from(symbols)
        .where(inArray(symbols.symbol, list))
      const exists = new Set(known.map((k) => k.symbol))
      const rows = list
        .filter((s) => exists.has(s))
        .map((symbol, i) => ({ login: event.payload.login, symbol, sortIndex: i }))
      if (rows.length > 0) await tx.insert(marketWatch).values(rows).onConflictDoNothing()
    },
  }
}

async function brandGroup(ctx: MarketCtx, brand: Brand, id: number) {
  const g = await ctx.accounts.read.groupIn(brand.id, id)
  if (!g) throw refuse('GROUP_NOT_FOUND', 'group not found in this brand')
  return g
}

export async function getDefaultWatch(ctx: MarketCtx, brand: Brand, id: number) {
  await brandGroup(ctx, brand, id)
  return { group_id: id, symbols: await defaultsOf(ctx.db, id) }
}

/** The market watch new accounts of a group start with; every symbol must be visible to the group. */
export async function setDefaultWatch(ctx: MarketCtx, brand: Brand, id: number, symbolList: string[]) {
  await brandGroup(ctx, brand, id)
  await ctx.refdata.fresh()
  for (const [i, symbol] of symbolList.entries()) {
    const gs = await ctx.refdata.forGroup(id, symbol)
    if (gs?.sec.show !== 1) throw invalid(`symbols.${i}: ${symbol} is not visible to the group`)
  }
  const json = JSON.stringify(symbolList)
  await ctx.db.transaction((tx) =>
    tx
      .insert(groupWatchDefaults)
      .values({ groupId: id, symbols: json })
      .onConflictDoUpdate({ target: groupWatchDefaults.groupId, set: { symbols: json } }),
  )
  return { group_id: id, symbols: symbolList }
}
