import type { AppContext } from '../../context'
import { marginSnapshot } from '../accounts/domain/margin'
import { fromMinor } from '../accounts/domain/money'
import type { AccountRecord, GroupRecord } from '../accounts/read-model'
import { type GroupSymbol, quoteForGroup } from '../market/reference'
import type { Quote, QuoteLookup } from './domain/conversion'
import { isBuy, marginInAccount, profitInAccount } from './domain/formulas'
import { averagePrice, type Holding } from './domain/holdings'
import type { OrderRow } from './positions'

export interface Exposure {
  floatingProfit: number
  margin: number
  commission: number
  storage: number
}

export interface PricedPosition {
  order: OrderRow
  gs: GroupSymbol
  quote: Quote
  /** Price the position would close at now. */
  closePrice: number
  /** Floating profit in the account currency (without swap and commission). */
  profit: number
  margin: number
}

/** The group's quote of a symbol now, or null without a price. */
export async function groupPrice(ctx: AppContext, gs: GroupSymbol): Promise<Quote | null> {
  const raw = await ctx.quotes.get(gs.info.symbol)
  if (!raw) return null
  return quoteForGroup(raw, gs)
}

export async function quoteLookup(ctx: AppContext): Promise<QuoteLookup> {
  await ctx.quotes.warmAll()
  return (s) => ctx.quotes.peek(s)
}

/** Floating profit and margin of a position (or a holding) at the group's quote now, in the account currency. */
async function priceAt(
  ctx: AppContext,
  gs: GroupSymbol,
  p: { cmd: number; volume: number; openPrice: number },
  leverage: number,
  currency: string,
  lookup: QuoteLookup,
) {
  const quote = (await groupPrice(ctx, gs)) ?? { bid: p.openPrice, ask: p.openPrice, time: 0 }
  const buy = isBuy(p.cmd)
  const closePrice = buy ? quote.bid : quote.ask
  const profit = profitInAccount(gs.info, p.cmd, p.volume, p.openPrice, closePrice, currency, lookup)
  const margin = marginInAccount(
    gs.info,
    p.volume,
    buy ? quote.ask : quote.bid,
    leverage,
    currency,
    lookup,
    gs.marginDivider,
  )
  return profit === null || margin === null ? null : { quote, closePrice, profit, margin }
}

/**
 * Prices open positions at the group's current quote: floating profit and margin (current price) in the
 * account currency. Null when a conversion rate is missing (reported as INVALID_MARGIN_LEVEL).
 */
export async function pricePositions(
  ctx: AppContext,
  account: Pick<AccountRecord, 'leverage'>,
  group: Pick<GroupRecord, 'id' | 'currency'>,
  positions: OrderRow[],
): Promise<PricedPosition[] | null> {
  if (positions.length === 0) return []
  const lookup = await quoteLookup(ctx)
  const out: PricedPosition[] = []
  for (const order of positions) {
    const gs = await ctx.refdata.forGroup(group.id, order.symbol)
    const priced = gs && (await priceAt(ctx, gs, order, account.leverage, group.currency, lookup))
    if (!gs || !priced) return null
    out.push({ order, gs, ...priced })
  }
  return out
}

export function sumExposure(priced: PricedPosition[], currency: string): Exposure {
  const e: Exposure = { floatingProfit: 0, margin: 0, commission: 0, storage: 0 }
  for (const p of priced) {
    e.floatingProfit += p.profit
    e.margin += p.margin
    e.commission += fromMinor(p.order.commission, currency)
    e.storage += fromMinor(p.order.storage, currency)
  }
  e.floatingProfit = Math.round(e.floatingProfit * 100) / 100
  return e
}

/**
 * Exposure of holdings at the group's current quotes (see domain/holdings: exact for the sum of the
 * positions, one pricing per symbol and direction). Null when a conversion rate is missing.
 */
export async function priceHoldings(
  ctx: AppContext,
  leverage: number,
  group: Pick<GroupRecord, 'id' | 'currency'>,
  holdings: Holding[],
): Promise<Exposure | null> {
  const e: Exposure = { floatingProfit: 0, margin: 0, commission: 0, storage: 0 }
  if (holdings.length === 0) return e
  const lookup = await quoteLookup(ctx)
  for (const h of holdings) {
    const gs = await ctx.refdata.forGroup(group.id, h.symbol)
    const priced =
      gs && (await priceAt(ctx, gs, { ...h, openPrice: averagePrice(h) }, leverage, group.currency, lookup))
    if (!priced) return null
    const { profit, margin } = priced
    e.floatingProfit += profit
    e.margin += margin
    e.commission += fromMinor(h.commission, group.currency)
    e.storage += fromMinor(h.storage, group.currency)
  }
  e.floatingProfit = Math.round(e.floatingProfit * 100) / 100
  return e
}

/** Margin figures of an account once `holdings` are its open positions. */
export async function marginWith(
  ctx: AppContext,
  a: { balance: number; credit: number; leverage: number },
  group: Pick<GroupRecord, 'id' | 'currency'>,
  holdings: Holding[],
) {
  const e = await priceHoldings(ctx, a.leverage, group, holdings)
  return (
    e &&
    marginSnapshot({
      balance: fromMinor(a.balance, group.currency),
      credit: fromMinor(a.credit, group.currency),
      ...e,
    })
  )
}

/** Live exposure of an account from its holdings (cached read model). */
export async function accountExposure(
  ctx: AppContext,
  account: AccountRecord,
  group: GroupRecord,
): Promise<Exposure | null> {
  return priceHoldings(ctx, account.leverage, group, await ctx.positions.holdings(account.login))
}
