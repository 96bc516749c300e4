import { and, eq, gte, inArray, type SQL, sql } from 'drizzle-orm'
import type { Tx } from '../../../kernel/db/client'
import type { Work } from '../../../kernel/db/unit-of-work'
import { type AccountReadModel, type AccountsApi, roundToMinor, type TradeResultInput } from '../../accounts'
import type { QuoteLookup } from '../../market'
import type { OrderRow, PositionReadModel } from '../book/positions'
import type { CloseReason } from '../domain/close-reasons'
import { profitInAccount } from '../domain/formulas'
import { dayOf, type RolloverSpec, settledThrough, swapDue } from '../domain/swap'
import { SwapCharged, TradeClosed, TradePartiallyClosed, TradeStoppedOut } from '../events'
import { orders } from '../schema'
import { tradeEvent } from '../views'

export type { CloseReason }

export interface CloseInput {
  /** The instance writing (orders.origin). */
  origin: string
  order: OrderRow
  /** The symbol as the account's group sees it (its swap settings too: a close settles the days owed). */
  spec: RolloverSpec
  currency: string
  /** Hundredths of a lot to close; the whole position when equal to its volume. */
  volume: number
  price: number
  reason: CloseReason
  comment?: string
  lookup: QuoteLookup
  now: number
  /**
   * The deal's time when it is not `now` (a trigger's execution written again after a stall: its tick's):
   * its close time and the day its swap is counted to; updated_at and the ledger row stay `now`.
   */
  dealTime?: number
  /** Extra predicate the row must still satisfy (e.g. the SL level that fired), so a trigger fires once. */
  guard?: SQL
  /** A stop-out's margin level (percent), for its event. */
  marginLevel?: number
}

/**
 * Closes all or part of a position in one transaction (DESIGN rules 3 and 4): the conditional UPDATE
 * (still open, same volume, guard) decides who wins; profit, swap and commission of the closed part
 * go to the ledger as one OP_TRADE row, as the closed row holds them; the event goes to the outbox. Null
 * when someone else won.
 *
 * The swap: a position held through a UTC midnight the daily job (engine/rollover.ts) has not charged yet
 * pays it here (`owedSwap`), so a close in the first seconds of a day does not escape it. The job may
 * charge it meanwhile: a whole close adds the days owed only while the row's rollover day is the one they
 * were counted from, and books the swap the row holds; a partial close, which splits the swap, wins only
 * against the swap it read.
 */
/** The closed row, and for a partial close the position that stays open (null after a full close). */
export interface CloseResult {
  closed: OrderRow
  rest: OrderRow | null
}

export async function closeTx(
  accounts: Pick<AccountsApi, 'postTradeResultsTx'>,
  tx: Tx,
  work: Work,
  c: CloseInput,
): Promise<CloseResult | null> {
  const o = c.order
  const profitMajor = profitInAccount(c.spec, o.cmd, c.volume, o.openPrice, c.price, c.currency, c.lookup)
  if (profitMajor === null) throw new Error(`no conversion rate for ${o.symbol} into ${c.currency}`)
  const profit = roundToMinor(profitMajor, c.currency)
  const full = c.volume === o.volume
  const today = dayOf(c.dealTime ?? c.now)
  const owed = owedSwap(c)
  const share = (x: number) => (full ? x : Math.round((x * c.volume) / o.volume))
  const commission = share(o.commission)
  const storage = share(o.storage + owed)
  const where = and(
    eq(orders.ticket, o.ticket),
    eq(orders.state, 'open'),
    eq(orders.volume, o.volume),
    c.guard,
  )
  const comment = c.comment ?? o.comment
  let closed: OrderRow | undefined
  let rest: OrderRow | undefined
  // whether this close charged the midnights owed (not the daily job, meanwhile)
  let charged = owed !== 0
  if (full) {
    const closing = {
      state: 'closed',
      closePrice: c.price,
      closeTime: c.dealTime ?? c.now,
      profit,
      closeReason: c.reason,
      comment,
      updatedAt: c.now,
      origin: c.origin,
    } as const
    ;[closed] = await tx
      .update(orders)
      .set(
        owed === 0 ? closing : { ...closing, storage: sql`${orders.storage} + ${owed}`, rolloverDay: today },
      )
      .where(owed === 0 ? where : and(where, eq(orders.rolloverDay, o.rolloverDay)))
      .returning()
    // the daily job charged them since the row was read: closed with the swap it holds
    if (!closed && owed !== 0) {
      charged = false
      ;[closed] = await tx
        .update(orders)
        .set(closing)
        .where(and(where, gte(orders.rolloverDay, today)))
        .returning()
    }
  } else {
    ;[rest] = await tx
      .update(orders)
      .set({
        volume: o.volume - c.volume,
        commission: o.commission - commission,
        storage: o.storage + owed - storage,
        rolloverDay: Math.max(o.rolloverDay, today),
        updatedAt: c.now,
        origin: c.origin,
      })
      .where(and(where, eq(orders.storage, o.storage), eq(orders.rolloverDay, o.rolloverDay)))
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
        closeTime: c.dealTime ?? c.now,
        closeReason: c.reason,
        comment,
        parent: o.ticket,
        rolloverDay: Math.max(o.rolloverDay, today),
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
  // the midnights this close charged are a swap charged, as the daily job's are (an event each)
  if (charged)
    work.emit(SwapCharged, o.brandId, {
      ...tradeEvent(rest ?? closed, c.currency),
      charge_minor: owed,
      day: today,
    })
  await accounts.postTradeResultsTx(tx, [resultOf(c, closed, profit + closed.commission + closed.storage)])
  emitClosed(work, c, closed)
  return { closed, rest: rest ?? null }
}

/**
 * The swap of the midnights a position was held through that the daily job has not charged yet, in
 * minor units, at the price it closes at (0 on the day it was opened or last rolled).
 */
function owedSwap(c: CloseInput) {
  const today = dayOf(c.dealTime ?? c.now)
  const from = settledThrough(c.order)
  if (from >= today) return 0
  return roundToMinor(swapDue(c.spec, c.order, from, today, c.price, c.currency, c.lookup), c.currency)
}

const resultOf = (c: CloseInput, closed: OrderRow, amountMinor: number): TradeResultInput => ({
  brandId: c.order.brandId,
  login: c.order.login,
  amountMinor,
  ticket: closed.ticket,
  comment: `close #${c.order.ticket} ${c.reason}`,
  now: c.now,
})

function emitClosed(work: Work, c: CloseInput, closed: OrderRow) {
  const payload = tradeEvent(closed, c.currency)
  if (c.reason === 'stopout')
    work.emit(TradeStoppedOut, c.order.brandId, {
      ...payload,
      reason: 'stopout',
      margin_level: c.marginLevel ?? 0,
    })
  else work.emit(TradeClosed, c.order.brandId, { ...payload, reason: c.reason })
}

/** Positions per UPDATE of a group of whole closes (each adds a few CASE branches). */
const CLOSES_PER_STATEMENT = 100

/**
 * Closes many positions in one transaction (the group commit of closes, ADR 0019): whole closes without a
 * guard with one conditional UPDATE ... RETURNING per 100 (each row still open with the volume it was
 * priced at, or it is left alone and answers null), their results to the ledger in one statement per
 * table (accounts' postTradeResultsTx), their events with the unit of work's one insert. Partial closes,
 * guarded ones (a trigger's level) and positions owing a midnight's swap go one by one (closeTx). An input whose profit cannot be priced
 * answers its Error, before anything of it is written; the others are not held up. Any other failure
 * fails the batch (a partial close's first statement may have run).
 */
export async function closeManyTx(
  accounts: Pick<AccountsApi, 'postTradeResultsTx'>,
  tx: Tx,
  work: Work,
  inputs: readonly CloseInput[],
): Promise<(CloseResult | null | Error)[]> {
  const out: (CloseResult | null | Error)[] = inputs.map(() => null)
  const whole: { i: number; c: CloseInput; profit: number }[] = []
  const tickets = new Set<number>()
  for (const [i, c] of inputs.entries()) {
    // a second close of one position in the batch finds it closed, as it would after the first
    if (tickets.has(c.order.ticket)) continue
    tickets.add(c.order.ticket)
    const o = c.order
    // the one refusal before anything is written: its profit cannot be priced (answered alone)
    const major = profitInAccount(c.spec, o.cmd, c.volume, o.openPrice, c.price, c.currency, c.lookup)
    if (major === null) {
      out[i] = new Error(`no conversion rate for ${o.symbol} into ${c.currency}`)
      continue
    }
    if (c.volume !== o.volume || c.guard || owedSwap(c) !== 0) {
      // whatever fails now failed after one of its statements ran (a partial close's cut volume): it is
      // thrown, so the transaction does not commit half a close; the whole batch is refused
      out[i] = await closeTx(accounts, tx, work, c)
      continue
    }
    whole.push({ i, c, profit: roundToMinor(major, c.currency) })
  }
  const booked: TradeResultInput[] = []
  for (let at = 0; at < whole.length; at += CLOSES_PER_STATEMENT) {
    const part = whole.slice(at, at + CLOSES_PER_STATEMENT)
    const byTicket = (value: (w: (typeof part)[number]) => string | number) =>
      sql`case ${orders.ticket} ${sql.join(
        part.map((w) => sql`when ${w.c.order.ticket} then ${value(w)}`),
        sql` `,
      )} end`
    const now = part[0]!.c.now
    const rows = await tx
      .update(orders)
      .set({
        state: 'closed',
        closePrice: byTicket((w) => w.c.price),
        closeTime: now,
        profit: byTicket((w) => w.profit),
        closeReason: byTicket((w) => w.c.reason),
        comment: byTicket((w) => w.c.comment ?? w.c.order.comment),
        updatedAt: now,
        origin: part[0]!.c.origin,
      })
      .where(
        and(
          inArray(
            orders.ticket,
            part.map((w) => w.c.order.ticket),
          ),
          eq(orders.state, 'open'),
          sql`${orders.volume} = ${byTicket((w) => w.c.order.volume)}`,
        ),
      )
      .returning()
    const closed = new Map(rows.map((r) => [r.ticket, r]))
    for (const w of part) {
      const row = closed.get(w.c.order.ticket)
      if (!row) continue
      out[w.i] = { closed: row, rest: null }
      // the swap the row holds: the daily job may have charged it since it was read
      booked.push(resultOf(w.c, row, w.profit + row.commission + row.storage))
      emitClosed(work, w.c, row)
    }
  }
  await accounts.postTradeResultsTx(tx, booked)
  return out
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
