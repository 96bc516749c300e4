import { and, eq, type SQL } from 'drizzle-orm'
import type { AppContext } from '../../context'
import type { Tx } from '../../kernel/db/client'
import { enqueueEvent } from '../../kernel/outbox'
import { roundToMinor } from '../accounts/domain/money'
import { postTradeResultTx } from '../accounts/ledger'
import type { QuoteLookup } from './domain/conversion'
import type { SymbolSpec } from './domain/formulas'
import { profitInAccount } from './domain/formulas'
import type { OrderRow } from './positions'
import { orders } from './schema'
import { tradeEvent } from './views'

export type CloseReason = 'client' | 'sl' | 'tp' | 'stopout' | 'group_close'

const EVENT: Record<CloseReason, string> = {
  client: 'trade.closed',
  sl: 'trade.closed',
  tp: 'trade.closed',
  stopout: 'trade.stopped_out',
  group_close: 'trade.closed',
}

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

export async function closeTx(tx: Tx, c: CloseInput): Promise<CloseResult | null> {
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
    await enqueueEvent(
      tx,
      o.brandId,
      'trade.partially_closed',
      tradeEvent(rest, { closed_ticket: closed.ticket }),
      c.now,
    )
  }
  if (!closed) return null
  await postTradeResultTx(tx, {
    brandId: o.brandId,
    login: o.login,
    amount: profit + commission + storage,
    ticket: closed.ticket,
    comment: `close #${o.ticket} ${c.reason}`,
    now: c.now,
  })
  await enqueueEvent(tx, o.brandId, EVENT[c.reason], tradeEvent(closed, { reason: c.reason }), c.now)
  return { closed, rest: rest ?? null }
}

/** After a trade write commits: drop cached positions and account totals, re-file the order's triggers. */
export async function afterTradeCommit(ctx: AppContext, ...changed: OrderRow[]) {
  const logins = [...new Set(changed.map((o) => o.login))]
  await ctx.positions.invalidate(...logins)
  await ctx.accountsRead.invalidateAccount(...logins)
  for (const o of changed) await ctx.engine.track(o)
}
