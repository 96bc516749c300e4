import type { Queryable } from '../../../kernel/db/client'
import { DependencyDown } from '../../../kernel/resilience'
import {
  type AccountRecord,
  type Exposure,
  fromMinor,
  type GroupRecord,
  marginSnapshot,
  roundToCurrency,
} from '../../accounts'
import {
  type GroupSymbol,
  type GroupSymbols,
  type Quote,
  type QuoteLookup,
  valuedForGroup,
} from '../../market'
import type { TradingCtx } from '../context'
import { isBuy, marginInAccount, profitInAccount } from '../domain/formulas'
import { averagePrice, type Holding } from '../domain/holdings'
import { holdingsOf } from './holdings-table'
import type { OrderRow } from './positions'

const noExposure = (): Exposure => ({ floatingProfit: 0, margin: 0, commission: 0, storage: 0 })

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

/**
 * What pricing reads, loaded once and then used without awaiting: the symbols as the groups see them and
 * the latest quotes (warmed, so conversion rates through other symbols are there too).
 */
export interface Pricing {
  symbols: GroupSymbols
  lookup: QuoteLookup
}

/** Pricing for positions of accounts in these groups (a batch of opens prices dozens at once). */
export async function pricing(ctx: TradingCtx, groupIds: Iterable<number>): Promise<Pricing> {
  const lookup = await ctx.market.quoteLookup()
  return { symbols: await ctx.refdata.snapshot(groupIds), lookup }
}

/** Floating profit and margin of a position (or a holding) at the group's quote now, in the account currency. */
function priceAt(
  p: Pricing,
  gs: GroupSymbol,
  pos: { cmd: number; volume: number; openPrice: number },
  leverage: number,
  currency: string,
) {
  const raw = p.lookup(gs.info.symbol)
  // a group side at zero or below counts at one point (market: valuedForGroup): the account stays priced
  const quote = raw ? valuedForGroup(raw, gs) : { bid: pos.openPrice, ask: pos.openPrice, time: 0 }
  const buy = isBuy(pos.cmd)
  const closePrice = buy ? quote.bid : quote.ask
  const profit = profitInAccount(gs.info, pos.cmd, pos.volume, pos.openPrice, closePrice, currency, p.lookup)
  const margin = marginInAccount(
    gs.info,
    pos.volume,
    buy ? quote.ask : quote.bid,
    leverage,
    currency,
    p.lookup,
    gs.marginDivider,
  )
  return profit === null || margin === null ? null : { quote, closePrice, profit, margin }
}

/**
 * Prices open positions at the group's current quote: floating profit and margin (current price) in the
 * account currency. Null when a conversion rate is missing (reported as INVALID_MARGIN_LEVEL).
 */
export async function pricePositions(
  ctx: TradingCtx,
  account: Pick<AccountRecord, 'leverage'>,
  group: Pick<GroupRecord, 'id' | 'currency'>,
  positions: OrderRow[],
): Promise<PricedPosition[] | null> {
  if (positions.length === 0) return []
  const p = await pricing(ctx, [group.id])
  const out: PricedPosition[] = []
  for (const order of positions) {
    const gs = p.symbols(group.id, order.symbol)
    const priced = gs && priceAt(p, gs, order, account.leverage, group.currency)
    if (!gs || !priced) return null
    out.push({ order, gs, ...priced })
  }
  return out
}

/**
 * Exposure of holdings at the group's current quotes (see domain/holdings: exact for the sum of the
 * positions, one pricing per symbol and direction). Null when a conversion rate is missing.
 */
function holdingsExposure(
  p: Pricing,
  leverage: number,
  group: Pick<GroupRecord, 'id' | 'currency'>,
  holdings: Holding[],
): Exposure | null {
  const e = noExposure()
  for (const h of holdings) {
    const gs = p.symbols(group.id, h.symbol)
    const priced = gs && priceAt(p, gs, { ...h, openPrice: averagePrice(h) }, leverage, group.currency)
    if (!priced) return null
    e.floatingProfit += priced.profit
    e.margin += priced.margin
    e.commission += fromMinor(h.commission, group.currency)
    e.storage += fromMinor(h.storage, group.currency)
  }
  e.floatingProfit = roundToCurrency(e.floatingProfit, group.currency)
  return e
}

/** Margin figures of an account once `holdings` are its open positions (synchronous, see `pricing`). */
export function marginOf(
  p: Pricing,
  a: { balance: number; credit: number; leverage: number },
  group: Pick<GroupRecord, 'id' | 'currency'>,
  holdings: Holding[],
) {
  const e = holdingsExposure(p, a.leverage, group, holdings)
  return (
    e &&
    marginSnapshot(
      {
        balance: fromMinor(a.balance, group.currency),
        credit: fromMinor(a.credit, group.currency),
        ...e,
      },
      group.currency,
    )
  )
}

/**
 * Live exposure of an account from its holdings: the cached read model's, or those `q` reads. With
 * `stale`, only at current prices: a cut-off feed or a held symbol never quoted here throws it (priced at
 * an old quote or at its open price, a position's loss would not count against money leaving).
 */
export async function accountExposure(
  ctx: TradingCtx,
  account: Pick<AccountRecord, 'login' | 'leverage'>,
  group: GroupRecord,
  q?: Queryable,
  stale?: (why: string) => Error,
): Promise<Exposure | null> {
  const holdings = q
    ? ((await holdingsOf(q, [account.login])).get(account.login) ?? [])
    : await ctx.positions.holdings(account.login)
  if (holdings.length === 0) return noExposure()
  const p = await pricing(ctx, [group.id])
  if (stale) {
    const why = ctx.market.staleness()
    if (why) throw stale(why)
    const unquoted = holdings.find((h) => !p.lookup(h.symbol))
    if (unquoted) throw stale(`no price for ${unquoted.symbol} on this instance yet`)
  }
  const e = holdingsExposure(p, account.leverage, group, holdings)
  // a price missing because the feed is cut off (the shared cache or the bus away) is no fault of the
  // caller's: 503, retried, rather than 400 INVALID_MARGIN_LEVEL
  if (e === null) {
    const why = ctx.market.staleness()
    if (why) throw new DependencyDown('quotes', why)
  }
  return e
}
