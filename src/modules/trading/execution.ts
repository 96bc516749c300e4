import { and, eq, type SQL } from 'drizzle-orm'
import type { Tx } from '../../kernel/db/client'
import type { Work } from '../../kernel/db/unit-of-work'
import { type AccountReadModel, type AccountsApi, roundToMinor } from '../accounts'
import type { QuoteLookup } from '../market'
import type { SymbolSpec } from './domain/formulas'
import { profitInAccount } from './domain/formulas'
import { TradeClosed, TradePartiallyClosed, TradeStoppedOut } from './events'
import type { OrderRow, PositionReadModel } from './positions'
import { orders } from './schema'
import { tradeEvent } from './views'

export type CloseReason = 'client' | 'sl' | 'tp' | 'stopout' | 'group_close' | 'risk_limit'

export interface CloseInput {
  /** The instance writing (orders.origin). */
  origin: string
  order: OrderRow
  spec: SymbolSpec
  currency: string
  /** Hundredths of a lot to close; the whole position when equal to its volume. */
  volume: number
  price: number
  reason: CloseReason
  comment?: string
  lookup: QuoteLookup
  now: number
  /** Extra predicate the row must still satisfy (e.g. the SL level that fired), so a trigger fires once. */
  guard?: SQL
  /** A stop-out's margin level (percent), for its event. */
  marginLevel?: number
}

/**
 * Closes all or part of a position in one transaction (DESIGN rules 3 and 4): the conditional UPDATE
 * (still open, same volume, guard) decides who wins; profit, swap and commission of the closed part
 * go to the ledger as one OP_TRADE row; the event goes to the outbox. Null when someone else won.
 */
/** The closed row, and for a partial close the position that stays open (null after a full close). */
export interface CloseResult {
  closed: OrderRow
  rest: OrderRow | null
}

export async function closeTx(
  accounts: Pick<AccountsApi, 'postTradeResultTx'>,
  tx: Tx,
  work: Work,
  c: CloseInput,
): Promise<CloseResult | null> {
  const o = c.order
  const profitMajor = profitInAccount(c.spec, o.cmd, c.volume, o.openPrice, c.price, c.currency, c.lookup)
  if (profitMajor === null) throw new Error(`no conversion rate for ${o.symbol} into ${c.currency}`)
  const profit = roundToMinor(profitMajor, c.currency)
  const full = c.volume === o.volume
  const share = (x: number) => (full ? x : Math.round((x * c.volume) / o.volume))
  const commission = share(o.commission)
  const storage = share(o.storage)
  const where = and(
    eq(orders.ticket, o.ticket),
    eq(orders.state, 'open'),
    eq(orders.volume, o.volume),
    c.guard,
  )
  const comment = c.comment ?? o.comment
  let closed: OrderRow | undefined
  let rest: OrderRow | undefined
  if (full) {
    ;[closed] = await tx
      .update(orders)
      .set({
        state: 'closed',
        closePrice: c.price,
        closeTime: c.now,
        profit,
        closeReason: c.reason,
        comment,
        updatedAt: c.now,
        origin: c.origin,
      })
      .where(where)
      .returning()
  } else {
    ;[rest] = await tx
      .update(orders)
      .set({
        volume: o.volume - c.volume,
        commission: o.commission - commission,
        storage: o.storage - storage,
        updatedAt: c.now,
        origin: c.origin,
      })
      .where(where)
      .returning()
    if (!rest) return null
    ;[closed] = await tx
      .insert(orders)
      .values({
        ...o,
        ticket: undefined,
        volume: c.volume,
        state: 'closed',
        commission,
        storage,
        profit,
        closePrice: c.price,
        closeTime: c.now,
        closeReason: c.reason,
        comment,
        parent: o.ticket,
        updatedAt: c.now,
        origin: c.origin,
      })
      .returning()
    work.emit(TradePartiallyClosed, o.brandId, {
      ...tradeEvent(rest, c.currency),
      closed_ticket: closed.ticket,
    })
  }
  if (!closed) return null
  await accounts.postTradeResultTx(tx, {
    brandId: o.brandId,
    login: o.login,
    amount: profit + commission + storage,
    ticket: closed.ticket,
    comment: `close #${o.ticket} ${c.reason}`,
    now: c.now,
  })
  const payload = tradeEvent(closed, c.currency)
  if (c.reason === 'stopout')
    work.emit(TradeStoppedOut, o.brandId, { ...payload, reason: 'stopout', margin_level: c.marginLevel ?? 0 })
  else work.emit(TradeClosed, o.brandId, { ...payload, reason: c.reason })
  return { closed, rest: rest ?? null }
}

/** What a trade write refreshes once it commits. */
export interface TradeRefresh {
  positions: PositionReadModel
  accountsRead: AccountReadModel
  /** Files (or re-files, or removes) an order's triggers. */
  track(o: OrderRow): Promise<void>
}

/**
 * After a trade write commits (effects of its unit of work, once per login and order): drop the cached
 * positions and account totals, re-file the order's triggers.
 */
export function refreshAfterCommit(work: Work, r: TradeRefresh, ...changed: OrderRow[]) {
  for (const o of changed) {
    work.after(`login:${o.login}`, async () => {
      await r.positions.invalidate(o.login)
      await r.accountsRead.invalidateAccount(o.login)
    })
    work.after(`order:${o.ticket}`, () => r.track(o))
  }
}
