import { and, eq, gt, or } from 'drizzle-orm'
import { idHostTime } from '../../../kernel/bus/bus'
import type { Tx } from '../../../kernel/db/client'
import { isBusy, isUnreachable, rootMessage } from '../../../kernel/db/errors'
import type { Work } from '../../../kernel/db/unit-of-work'
import { type GroupRecord, roundToMinor } from '../../accounts'
import type { Quote } from '../../market'
import { marginOf, type pricing } from '../book/exposure'
import { fundsOf } from '../book/holdings-table'
import type { OrderRow } from '../book/positions'
import { closeTx, refreshAfterCommit, type TradeRefresh } from '../commit/execution'
import type { TradingCtx } from '../context'
import { commission, isBuy, profitInAccount } from '../domain/formulas'
import { addHolding } from '../domain/holdings'
import { dayOf } from '../domain/swap'
import { stopDue } from '../domain/triggers'
import { TradeActivated, TradeCancelled } from '../events'
import { orders } from '../schema'
import { tradeEvent } from '../views'

/**
 * An execution's price is the tick's (a trigger, a stop-out): its write goes ahead of the process's other
 * waiting writes (kernel/db/group-writer.ts, WriteOrder).
 */
export const URGENT = { urgent: true }

/** What an execution did: the stat it counts, or a pending order cancelled for lack of margin. */
type Outcome = 'activated' | 'sl' | 'tp' | 'cancelled'

/**
 * A due trigger's write (the engine decides it on a tick); null when the order had changed (it lost its race).
 * It may run again when it was not written (the engine's retry): its guarded update keeps it to once, and
 * `at` (its tick's time) is the deal's time then, not the time it is written.
 */
export interface Execution {
  ticket: number
  /** The bus id of the tick that decided it. */
  tick: string
  /** The trigger it executes: a stop-out waits only for an SL's or TP's write (trigger-engine.ts, `waitingLogins`). */
  kind?: 'activate' | 'sl' | 'tp'
  write: (tx: Tx, work: Work, at?: number) => Promise<Outcome | null>
}

/**
 * Why an execution was not written: the database did not answer or was busy (`unavailable`: nothing was
 * refused, the same write may commit later), or it refused the write (`failed`, logged).
 */
export type NotWritten = 'unavailable' | 'failed'

/** True when the database did not take a write (busy, unreachable, no answer in time): try it again. */
const unavailable = (err: unknown) => isBusy(err) || isUnreachable(err)

/**
 * Writes executions in one unit of work; if the database refused it, each again alone, so one that cannot
 * be written does not hold back the others. Never throws: what was not written says why (NotWritten), and
 * the engine writes it again (trigger-engine.ts, `retryLater`). When the database did not answer, none is
 * tried alone (each would wait for its own timeout).
 */
export async function writeExecutions(
  ctx: TradingCtx,
  batch: Execution[],
  again = false,
): Promise<(Outcome | NotWritten | null)[]> {
  // written again: the deal is its tick's, as its price is (the first try writes the time it is written)
  const at = (e: Execution) => (again ? dealTime(ctx, e) : undefined)
  try {
    return await ctx.uow.run(async (tx, work) => {
      const out: (Outcome | null)[] = []
      for (const e of batch) out.push(await e.write(tx, work, at(e)))
      return out
    }, URGENT)
  } catch (err) {
    if (batch.length === 1 || unavailable(err)) return batch.map((e) => notWritten(ctx, e, err))
    const results: (Outcome | NotWritten | null)[] = []
    for (const e of batch)
      results.push(
        await ctx.uow
          .run((tx, work) => e.write(tx, work, at(e)), URGENT)
          .catch((err: unknown) => notWritten(ctx, e, err)),
      )
    return results
  }
}

/**
 * When the tick that decided an execution was published (its bus id), never after now; now when that tick
 * was on an earlier UTC day: the daily rollover may have charged the night since, and a close dated before
 * midnight would carry the swap of a night it was not held through (its deal time and its swap days must
 * agree; the price stays the tick's).
 */
function dealTime(ctx: Pick<TradingCtx, 'clock' | 'bus'>, e: Pick<Execution, 'tick'>) {
  const now = ctx.clock.now()
  // the id is in Redis's clock: back into this host's, as `now` and every other time written
  const t = idHostTime(ctx.bus, e.tick)
  if (!Number.isFinite(t) || t <= 0 || dayOf(t) !== dayOf(now)) return now
  return Math.min(t, now)
}

function notWritten(ctx: TradingCtx, e: Execution, err: unknown): NotWritten {
  const why = unavailable(err) ? 'unavailable' : 'failed'
  ctx.logger.log(why === 'failed' ? 'error' : 'warn', 'trigger execution not written', {
    ticket: e.ticket,
    why,
    err: rootMessage(err),
  })
  return why
}

/** An SL or TP reached: the position closes at the quote, unless its level changed meanwhile (the guard). */
export function stopWrite(
  ctx: TradingCtx,
  refreshes: TradeRefresh,
  o: OrderRow,
  kind: 'sl' | 'tp',
  spec: Parameters<typeof closeTx>[3]['spec'],
  group: GroupRecord,
  q: Quote,
  lookup: Parameters<typeof closeTx>[3]['lookup'],
): Execution['write'] {
  const level = kind === 'sl' ? o.sl : o.tp
  return async (tx, work, at) => {
    const r = await closeTx(ctx.accounts, tx, work, {
      origin: ctx.origin,
      order: o,
      spec,
      currency: group.currency,
      volume: o.volume,
      price: isBuy(o.cmd) ? q.bid : q.ask,
      reason: kind,
      lookup,
      now: ctx.clock.now(),
      dealTime: at,
      guard: eq(kind === 'sl' ? orders.sl : orders.tp, level),
    })
    if (!r) return null
    refreshAfterCommit(work, refreshes, r.closed)
    return kind
  }
}

/**
 * A pending order reached its price: it becomes a position at the quote that reached it (a limit's price or
 * better, a stop's price or worse when the market gaps past it: a stop filled at its own price would hand
 * the client the gap), its commission computed at that price, or it is cancelled: without the margin, or on an account that may no longer trade
 * (disabled, or read-only as a prop challenge's account after its verdict). A position whose SL or TP
 * that quote already crossed closes in the same transaction, as the tick's SL or TP (stopWrite). `at`: the
 * deal's time when written again (its open or cancel time, its first swap day, whether it had expired).
 */
export async function activateTx(
  ctx: TradingCtx,
  refreshes: TradeRefresh,
  tx: Tx,
  work: Work,
  o: OrderRow,
  group: GroupRecord,
  p: Awaited<ReturnType<typeof pricing>>,
  q: Quote,
  at?: number,
): Promise<Outcome | null> {
  const now = ctx.clock.now()
  const deal = at ?? now
  const fill = isBuy(o.cmd) ? q.ask : q.bid
  const funds = (await fundsOf(ctx.accounts, tx, [o.login])).get(o.login)
  // the commission is the deal's, at the price it fills at (a percent of a gapped notional differs from
  // the one placed); without a conversion rate now, the one computed when it was placed stands
  const gs = p.symbols(group.id, o.symbol)
  const comm = gs ? commission(gs.info, gs.sec, o.volume, fill, group.currency, p.lookup) : null
  const commissionMinor = comm === null ? o.commission : roundToMinor(comm, group.currency)
  const trial = addHolding(funds?.holdings ?? [], { ...o, openPrice: fill, commission: commissionMinor })
  const m = funds?.tradeAllowed && marginOf(p, funds, group, trial)
  const cancelled = !funds?.tradeAllowed ? 'trade_disabled' : !m || m.margin_free < 0 ? 'no_money' : null
  const [r] = await tx
    .update(orders)
    .set(
      cancelled === null
        ? {
            state: 'open',
            cmd: o.cmd % 2,
            openPrice: fill,
            commission: commissionMinor,
            openTime: deal,
            rolloverDay: dayOf(deal),
            updatedAt: now,
            origin: ctx.origin,
          }
        : {
            state: 'cancelled',
            // never filled, nothing charged: the estimate it was placed with goes (history shows 0)
            commission: 0,
            closeTime: deal,
            closeReason: cancelled,
            updatedAt: now,
            origin: ctx.origin,
          },
    )
    .where(
      and(
        eq(orders.ticket, o.ticket),
        eq(orders.state, 'pending'),
        eq(orders.openPrice, o.openPrice),
        // an order past its expiration is never filled, whatever the engine's book says (expiry.ts)
        or(eq(orders.expiration, 0), gt(orders.expiration, Math.floor(deal / 1000))),
      ),
    )
    .returning()
  if (!r) return null
  const payload = tradeEvent(r, group.currency)
  if (cancelled === null) work.emit(TradeActivated, o.brandId, { ...payload, pending_cmd: o.cmd, quote: q })
  else work.emit(TradeCancelled, o.brandId, { ...payload, reason: cancelled, quote: q })
  refreshAfterCommit(work, refreshes, r)
  if (cancelled !== null) return 'cancelled'
  // the tick that filled it may already be past its SL or TP (a gap, a wide spread): the position's
  // triggers are filed only after this commit, past this tick, so they are looked at here, at this quote
  const stop = stopDue(r, q.bid, q.ask)
  if (stop && gs) {
    const price = isBuy(r.cmd) ? q.bid : q.ask
    // without a conversion rate for its profit it stays open, filed: the next tick closes it
    if (profitInAccount(gs.info, r.cmd, r.volume, r.openPrice, price, group.currency, p.lookup) !== null)
      await stopWrite(ctx, refreshes, r, stop, gs.info, group, q, p.lookup)(tx, work, at)
  }
  return 'activated'
}
