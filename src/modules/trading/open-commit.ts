import { getTableName } from 'drizzle-orm'
import { insertRows } from '../../kernel/db/bulk-insert'
import type { Tx } from '../../kernel/db/client'
import { type Committer, GroupCommit, PerRequestCommit } from '../../kernel/db/group-commit'
import { event } from '../../kernel/events/topic'
import { ApiError } from '../../kernel/http/errors'
import type { GroupRecord } from '../accounts'
import type { TradingCtx } from './context'
import { addHolding, type Holding } from './domain/holdings'
import { TradeOpened } from './events'
import { marginOf, pricing } from './exposure'
import { fundsOf } from './holdings-table'
import type { OrderRow } from './positions'
import { orders } from './schema'
import { tradeEvent } from './views'

export const openError = (message: string) => new ApiError(500, 'OPEN_ORDER_ERROR', message)

/** An order checked against symbol, session, volume and stops, waiting for the margin check and insert. */
export interface OpenRequest {
  values: typeof orders.$inferInsert & { login: number; brandId: number }
  group: Pick<GroupRecord, 'id' | 'currency'>
  /** Margin of the new position in the account currency; null for a pending order (no margin yet). */
  margin: number | null
}

export interface Opened {
  row: OrderRow
  groupId: number
}

/**
 * Opens orders by group commit (kernel/db/group-commit): one transaction reads the balances and the
 * holdings of every login in the batch, checks each order's free margin in arrival order (an order sees
 * the ones accepted before it), inserts the accepted rows and their outbox events with one statement
 * each. The margin check runs on the committed state inside the write lock, so two opens of one account
 * never both spend the same free margin, on this instance or another.
 */
export function openCommitter(
  ctx: TradingCtx,
  track: (rows: { order: OrderRow; groupId: number }[]) => Promise<void>,
): Committer<OpenRequest, Opened> {
  const afterCommit = async (opened: Opened[]) => {
    await ctx.positions.invalidate(...new Set(opened.map((o) => o.row.login)))
    await track(opened.map((o) => ({ order: o.row, groupId: o.groupId })))
    // trade.opened has no consumer today: then its events are written delivered and nothing is to wake
    if (opened.length > 0 && ctx.events.consumersOf(TradeOpened.name).length > 0) ctx.events.wake()
  }
  const onAfterCommitError = (e: unknown) =>
    ctx.logger.log('error', 'after trade open', { err: e instanceof Error ? e.message : String(e) })
  const handler = (tx: Tx, reqs: OpenRequest[]) => commitOpens(ctx, tx, reqs)
  if (!ctx.config.groupCommit)
    return new PerRequestCommit(ctx.db, handler, { afterCommit, onAfterCommitError })
  // bench/trading.ts: 50 connections commit as one batch of ~50 instead of alternating halves (ADR 0001)
  return new GroupCommit(ctx.db, handler, { afterCommit, onAfterCommitError, lingerMs: 5 })
}

async function commitOpens(ctx: TradingCtx, tx: Tx, reqs: OpenRequest[]): Promise<(Opened | Error)[]> {
  const logins = [...new Set(reqs.filter((r) => r.margin !== null).map((r) => r.values.login))]
  const funds = await fundsOf(ctx.accounts, tx, logins)
  const p = await pricing(
    ctx,
    reqs.map((r) => r.group.id),
  )
  const results: (Opened | Error | null)[] = []
  const accepted: OpenRequest[] = []
  for (const r of reqs) {
    if (r.margin !== null) {
      const v = r.values
      const a = funds.get(v.login)
      const trial: Holding[] = (a?.holdings ?? []).map((h) => ({ ...h }))
      addHolding(trial, {
        symbol: v.symbol,
        cmd: v.cmd,
        volume: v.volume,
        openPrice: v.openPrice,
        commission: v.commission ?? 0,
        storage: 0,
      })
      const m = a && marginOf(p, a, r.group, trial)
      if (!m || m.margin_free < 0) {
        results.push(
          openError(
            `not enough money: the position needs ${r.margin.toFixed(2)} ${r.group.currency} of margin`,
          ),
        )
        continue
      }
      if (a) a.holdings = trial
    }
    results.push(null)
    accepted.push(r)
  }
  if (accepted.length === 0) return results as Error[]
  const rows = await insertOrders(tx, accepted)
  await ctx.events.write(
    tx,
    rows.map((row, i) => event(TradeOpened, row.brandId, tradeEvent(row, accepted[i].group.currency))),
    ctx.clock.now(),
  )
  let i = 0
  return results.map((r) => r ?? { row: rows[i], groupId: accepted[i++].group.id })
}

/** The columns an open writes, in the order of the positional rows below. */
const INSERTED = [
  'brandId',
  'login',
  'symbol',
  'cmd',
  'volume',
  'state',
  'openPrice',
  'openTime',
  'sl',
  'tp',
  'expiration',
  'comment',
  'commission',
  'rolloverDay',
  'updatedAt',
  'origin',
] as const satisfies readonly (keyof Omit<OrderRow, 'ticket'>)[]
const INSERTED_COLUMNS = INSERTED.map((k) => orders[k].name)

/**
 * Inserts the accepted orders with multi-row statements of bound values (kernel/db/bulk-insert; the
 * rows once travelled as one JSON parameter, but SQLite's JSON extraction cost more than the insert) and
 * returns them as stored, with their tickets.
 */
async function insertOrders(tx: Tx, reqs: OpenRequest[]): Promise<OrderRow[]> {
  const rows = reqs.map(
    (r): Omit<OrderRow, 'ticket'> => ({
      brandId: r.values.brandId,
      login: r.values.login,
      symbol: r.values.symbol,
      cmd: r.values.cmd,
      volume: r.values.volume,
      state: r.values.state,
      openPrice: r.values.openPrice,
      openTime: r.values.openTime,
      sl: r.values.sl ?? 0,
      tp: r.values.tp ?? 0,
      expiration: r.values.expiration ?? 0,
      comment: r.values.comment ?? '',
      commission: r.values.commission ?? 0,
      storage: 0,
      profit: 0,
      closePrice: 0,
      closeTime: 0,
      closeReason: '',
      parent: null,
      rolloverDay: r.values.rolloverDay ?? 0,
      updatedAt: r.values.updatedAt,
      origin: r.values.origin ?? '',
    }),
  )
  const tickets = await insertRows(
    tx,
    getTableName(orders),
    INSERTED_COLUMNS,
    rows.map((r) => INSERTED.map((k) => r[k])),
  )
  return rows.map((r, i) => ({ ...r, ticket: tickets[i] }))
}
