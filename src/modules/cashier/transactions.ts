import { and, asc, eq, inArray, sql } from 'drizzle-orm'
import type { Tx } from '../../kernel/db/client'
import { rowsOf, statement } from '../../kernel/db/statement'
import type { Work } from '../../kernel/db/unit-of-work'
import { isRefused } from '../../kernel/http/errors'
import { fromMinor, roundToMinor } from '../accounts'
import type { CashierCtx } from './context'
import {
  type Action,
  next,
  STATUS,
  type StatusName,
  statusFilter,
  statusName,
  txStatusName,
  type WithdrawalName,
} from './domain/status'
import { refuse } from './errors'
import { CashierCredited, CashierReversed } from './events'
import { cashierHistory, cashierTransactions } from './schema'

export type TxRow = typeof cashierTransactions.$inferSelect
type HistoryRow = typeof cashierHistory.$inferSelect

/** The rows a `status` filter names (domain/status.ts: statusFilter), as one condition. */
export function statusIs(name: StatusName | WithdrawalName) {
  const f = statusFilter(name)
  return and(
    eq(cashierTransactions.status, f.status),
    f.kind ? eq(cashierTransactions.kind, f.kind) : undefined,
  )
}

export const txNotFound = () => refuse('TRANSACTION_NOT_FOUND', 'transaction not found')
export const wrongState = (row: TxRow, what: string) =>
  refuse(
    'TRANSACTION_STATE_CONFLICT',
    `transaction ${row.id} is ${txStatusName(row.kind, row.status)}: cannot ${what}`,
  )

const seconds = (ms: number) => Math.floor(ms / 1000)

export function txView(r: TxRow, history: HistoryRow[]) {
  const m = (x: number) => fromMinor(x, r.currency)
  return {
    id: r.id,
    kind: r.kind,
    login: r.login,
    method: r.method,
    provider: r.provider,
    status: r.status,
    status_name: txStatusName(r.kind, r.status),
    amount: m(r.amount),
    fee: m(r.fee),
    net_amount: m(r.amount - r.fee),
    currency: r.currency,
    provider_ref: r.providerRef,
    reason: r.reason,
    created_time: seconds(r.createdAt),
    updated_time: seconds(r.updatedAt),
    history: history.map((h) => historyView(r.kind, h)),
  }
}

// which staff member acted, and staff and system notes (comments, internal errors), are for the back office
const internal = (actor: string) => actor === 'system' || actor.startsWith('staff:')
const historyView = (kind: TxRow['kind'], h: HistoryRow) => ({
  from: h.fromStatus,
  to: h.toStatus,
  to_name: txStatusName(kind, h.toStatus),
  actor: h.actor.startsWith('staff:') ? 'staff' : h.actor,
  note: internal(h.actor) ? '' : h.note,
  time: seconds(h.createdAt),
})
/** The back office's view: who did what, and what the provider said. */
export function staffTxView(r: TxRow, history: HistoryRow[]) {
  return {
    ...txView(r, history),
    customer_id: r.customerId,
    staff_note: r.staffNote,
    provider_amount: r.providerAmount === null ? null : fromMinor(r.providerAmount, r.currency),
    provider_currency: r.providerCurrency,
    credit_attempts: r.creditAttempts,
    flagged: r.flagged === 1,
    history: history.map((h) => ({ ...historyView(r.kind, h), actor: h.actor, note: h.note })),
  }
}

async function historyOf(ctx: CashierCtx, ids: number[]) {
  const out = new Map<number, HistoryRow[]>()
  if (ids.length === 0) return out
  const rows = await ctx.db
    .select()
    .from(cashierHistory)
    .where(inArray(cashierHistory.transactionId, ids))
    .orderBy(asc(cashierHistory.id))
  for (const h of rows) out.set(h.transactionId, [...(out.get(h.transactionId) ?? []), h])
  return out
}

/** A page of a list read with `limit + 1` rows (newest first): the views with their histories and the cursor. */
export async function pageOf<V>(
  ctx: CashierCtx,
  rows: TxRow[],
  limit: number,
  view: (r: TxRow, history: HistoryRow[]) => V,
) {
  const page = rows.slice(0, limit)
  const history = await historyOf(
    ctx,
    page.map((r) => r.id),
  )
  return {
    rows: page.map((r) => view(r, history.get(r.id) ?? [])),
    next_cursor: rows.length > limit ? page[page.length - 1]!.id : null,
  }
}

/** A transaction of the brand as it is now, with its history (the brand in the query, as everywhere). */
async function load(ctx: CashierCtx, brandId: number, id: number) {
  const [row] = await ctx.db
    .select()
    .from(cashierTransactions)
    .where(and(eq(cashierTransactions.id, id), eq(cashierTransactions.brandId, brandId)))
  if (!row) throw txNotFound()
  return { row, history: (await historyOf(ctx, [id])).get(id) ?? [] }
}

export async function viewOf(ctx: CashierCtx, brandId: number, id: number) {
  const l = await load(ctx, brandId, id)
  return txView(l.row, l.history)
}

export async function staffViewOf(ctx: CashierCtx, brandId: number, id: number) {
  const l = await load(ctx, brandId, id)
  return staffTxView(l.row, l.history)
}

const p = sql.placeholder

const recordStatement = statement((qb) =>
  qb.insert(cashierHistory).values({
    transactionId: p('id'),
    fromStatus: p('from'),
    toStatus: p('to'),
    actor: p('actor'),
    note: p('note'),
    createdAt: p('now'),
  } as never),
)

/**
 * What `staff_note` holds at most (characters). Past it the earlier text keeps its start and loses its
 * end (marked …), and the newest note is kept whole: the first notes and the latest stay in view.
 */
export const STAFF_NOTE_MAX = 2000

/**
 * `staff_note` with `note` added after what it holds (a line each), as the statement writes it: an
 * earlier note ('short by X, collect it') stays in view beside the new one. Past STAFF_NOTE_MAX the
 * earlier text is cut at its end (marked …), the new note kept whole (itself cut to what the bound
 * leaves beside the mark when it alone would fill it).
 */
export function withNote(note: string) {
  const col = cashierTransactions.staffNote
  const alone = note.slice(0, STAFF_NOTE_MAX)
  const added = note.slice(0, STAFF_NOTE_MAX - 2)
  const keep = STAFF_NOTE_MAX - added.length - 2
  return sql<string>`case when ${col} = '' then ${alone}
    when length(${col}) > ${keep} then substr(${col}, 1, ${keep}) || ${`…\n${added}`}
    else ${col} || ${`\n${added}`} end`
}

/** `withNote` on a note read in the writer's transaction (a transition's columns, `move`'s set). */
export function noteAfter(earlier: string, note: string) {
  if (!earlier) return note.slice(0, STAFF_NOTE_MAX)
  const added = note.slice(0, STAFF_NOTE_MAX - 2)
  const keep = STAFF_NOTE_MAX - added.length - 2
  return earlier.length > keep ? `${earlier.slice(0, keep)}…\n${added}` : `${earlier}\n${added}`
}

/**
 * Flags a transaction for staff with a note (kept in its history), added to the staff note it has; its
 * status does not change.
 */
export async function flag(tx: Tx, row: TxRow, staffNote: string, actor: string, now: number) {
  const [done] = (await tx
    .update(cashierTransactions)
    .set({ flagged: 1, staffNote: withNote(staffNote) })
    .where(eq(cashierTransactions.id, row.id))
    .returning()) as [TxRow]
  await record(tx, row.id, row.status, row.status, actor, staffNote, now)
  return done
}

export async function record(
  tx: Tx,
  id: number,
  from: number | null,
  to: number,
  actor: string,
  note: string,
  now: number,
) {
  await recordStatement(tx, { id, from, to, actor, note, now })
}

/** The conditional UPDATE of a transition, one statement text per set of columns it changes. */
const moveStatements = new Map<string, ReturnType<typeof statement>>()
function moveStatement(columns: string[]) {
  const key = columns.join(',')
  let s = moveStatements.get(key)
  if (!s) {
    s = statement((qb) =>
      qb
        .update(cashierTransactions)
        .set(Object.fromEntries([...columns, 'status', 'updatedAt'].map((c) => [c, p(c)])) as never)
        .where(and(eq(cashierTransactions.id, p('id')), eq(cashierTransactions.status, p('from'))))
        .returning(),
    )
    moveStatements.set(key, s)
  }
  return s
}

/**
 * One transition (domain/status.ts) as a conditional UPDATE with its history row; null when the action
 * does not apply to the row's status or another writer moved it first (nothing changes then).
 */
export async function move(
  tx: Tx,
  row: TxRow,
  action: Action,
  actor: string,
  now: number,
  set: Partial<TxRow> = {},
  note = '',
): Promise<TxRow | null> {
  const to = next(row.kind, row.status, action)
  if (to === null) return null
  // drizzle's set leaves out what is undefined: so does the statement's text
  const columns = Object.keys(set).filter(
    (c) => set[c as keyof TxRow] !== undefined && c !== 'status' && c !== 'updatedAt',
  )
  const [r] = rowsOf(
    cashierTransactions,
    await moveStatement(columns)(tx, { ...set, status: to, updatedAt: now, id: row.id, from: row.status }),
  )
  if (!r) return null
  await record(tx, r.id, row.status, to, actor, note || action, now)
  return r
}

/**
 * The name a withdrawal's held funds carry in the ledger, on the hold, on its return and on
 * `cashier.withdrawal_paid` (accounts' `hold`); null for a withdrawal held before migration 0035.
 */
export const holdOf = (r: TxRow) =>
  r.kind === 'withdrawal' && r.holdNamed ? `cashier-withdrawal:${r.id}` : null

/** A transaction as its events carry it: amounts in integer minor units with their currency. */

export const money = (r: TxRow) => ({
  transaction_id: r.id,
  customer_id: r.customerId,
  login: r.login,
  method: r.method,
  provider: r.provider,
  amount_minor: r.amount,
  fee_minor: r.fee,
  currency: r.currency,
})

/**
 * Credits a confirmed deposit (amount less fee): one ledger row under the key `cashier:<id>` (unique per
 * login, so never twice), the move to credited and `cashier.credited`, all in the caller's transaction.
 * A ledger refusal (the account is gone) moves it to credit_failed instead, for the retry job.
 */
export async function credit(
  ctx: CashierCtx,
  tx: Tx,
  work: Work,
  row: TxRow,
  actor: string,
  now: number,
  action: Action = 'credit',
  note = '',
  /** Columns written with the move (a review credits the amount received: `amount`, `fee`). */
  set: Partial<TxRow> = {},
) {
  if (next(row.kind, row.status, action) === null) return null
  try {
    const net = row.amount - row.fee
    if (net > 0)
      await ctx.accounts.postOperationTx(tx, work, {
        brandId: row.brandId,
        login: row.login,
        op: 'OP_BALANCE_IN',
        amountMinor: net,
        reason: 'TR_REASON_DEPOSIT',
        comment: `deposit #${row.id} ${row.method}`,
        apiData: { transaction_id: row.id, provider: row.provider, provider_ref: row.providerRef },
        idempotencyKey: `cashier:${row.id}`,
        createdBy: actor,
      })
  } catch (e) {
    if (!isRefused(e)) throw e
    return move(tx, row, 'credit_error', 'system', now, { creditAttempts: row.creditAttempts + 1 }, e.message)
  }
  const r = await move(tx, row, action, actor, now, { ...set, creditAttempts: row.creditAttempts + 1 }, note)
  // the ledger row is written already: another writer moved the row first, so all of it rolls back
  if (!r) throw new LostRace(row.id)
  work.emit(CashierCredited, r.brandId, money(r))
  return r
}

/** Another writer changed the transaction within our transaction's window; the caller retries. */
export class LostRace extends Error {
  constructor(id: number) {
    super(`transaction ${id} changed meanwhile`)
  }
}

/**
 * Takes a credited deposit back (refund or chargeback): a balance-out of what was credited under the key
 * `cashier-reversal:<id>`. A provider's refund or chargeback is a fact (the provider has taken the money
 * back already): it is always recorded, even when the customer spent the money, and may take the balance
 * below zero, as brokers do for chargebacks; the transaction is then flagged for staff with the
 * shortfall to collect (ADR 0011): what its balance, or with positions open its equity less credit, is
 * below zero. A refund staff start themselves is money leaving as a withdrawal is: the balance must cover
 * it and it may not take the free margin less credit below zero (open positions stay covered).
 */
export async function reverse(
  ctx: CashierCtx,
  tx: Tx,
  work: Work,
  row: TxRow,
  action: 'refunded' | 'refund' | 'chargeback',
  actor: string,
  now: number,
  note = '',
) {
  const r = await move(tx, row, action, actor, now, {}, note)
  if (!r || r.status === STATUS.manual_review) return r
  const net = row.amount - row.fee
  const fromProvider = action !== 'refund'
  let shortMinor = 0
  if (net > 0) {
    const posted = await ctx.accounts.postOperationTx(tx, work, {
      brandId: row.brandId,
      login: row.login,
      op: 'OP_BALANCE_OUT',
      amountMinor: net,
      reason: 'TR_REASON_DEPOSIT',
      comment: `${statusName(r.status)} of deposit #${row.id}`,
      apiData: { transaction_id: row.id, provider: row.provider },
      idempotencyKey: `cashier-reversal:${row.id}`,
      createdBy: actor,
      allowNegative: fromProvider,
      keepFreeMargin: !fromProvider,
    })
    if (fromProvider && !posted.idempotent)
      shortMinor = Math.max(0, -posted.row.balanceAfter, await equityShort(ctx, tx, row.login))
  }
  const shortfall = fromMinor(shortMinor, row.currency)
  let done = r
  if (shortMinor > 0)
    done = await flag(
      tx,
      r,
      `${statusName(r.status)} not covered: the account is short by ${shortfall} ${row.currency} (its balance, or its equity less credit with positions open); collect it from the customer`,
      'system',
      now,
    )
  work.emit(CashierReversed, r.brandId, {
    ...money(done),
    status: statusName(r.status),
    ...(shortMinor > 0 ? { shortfall_minor: shortMinor } : {}),
  })
  return done
}

/**
 * What the account's equity less its credit is below zero after money was taken back (minor units): a
 * loss of open positions the balance no longer covers is short as well. Without current prices (a
 * cut-off feed) only the balance tells: a provider's reversal is recorded whatever the prices.
 */
async function equityShort(ctx: CashierCtx, tx: Tx, login: number) {
  try {
    const { margin, currency } = await ctx.accounts.marginIn(tx, login)
    return Math.max(0, -roundToMinor(margin.equity - margin.credit, currency))
  } catch (e) {
    if (isRefused(e)) return 0
    throw e
  }
}

/** Returns a withdrawal's held funds (rejected, or its payout failed). */
export async function releaseHold(ctx: CashierCtx, tx: Tx, work: Work, row: TxRow, actor: string) {
  await ctx.accounts.postOperationTx(tx, work, {
    brandId: row.brandId,
    login: row.login,
    op: 'OP_BALANCE_IN',
    amountMinor: row.amount,
    reason: 'TR_REASON_WITHDRAWAL',
    comment: `withdrawal #${row.id} returned`,
    apiData: { transaction_id: row.id },
    idempotencyKey: `cashier-release:${row.id}`,
    hold: holdOf(row),
    createdBy: actor,
  })
}
