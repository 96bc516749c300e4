import { and, eq } from 'drizzle-orm'
import type { Tx } from '../../../kernel/db/client'
import type { CashierCtx } from '../context'
import { txStatusName } from '../domain/status'
import { refuse } from '../errors'
import { cashierTransactions } from '../schema'
import { LostRace, staffViewOf, type TxRow, txNotFound, wrongState } from '../transactions'

export const MAX_CREDIT_ATTEMPTS = 5

/**
 * How long an approval may wait on the provider's payout call (ms): the approval's send lease
 * (`payout_sending_until`). Past it the sending instance is taken as gone: the reconcile job moves the
 * withdrawal to manual_review (flagged: the money may have left), and staff's paid and payout-failed are
 * accepted again.
 */
export const PAYOUT_SEND_LEASE_MS = 5 * 60_000

/**
 * How long before its lease lapses a payout call is given up (ms): the provider's call runs against the
 * lease less this (aborted then, an unknown outcome), so the approval writes it to manual_review under
 * its own lease with time to spare, and no instance still has a send in flight once the lease lapsed.
 */
export const PAYOUT_ANSWER_MARGIN_MS = 30_000

/**
 * 409 PAYOUT_BEING_SENT while the withdrawal's payout is being sent (its approval waits on the provider's
 * answer, its lease not lapsed): recording it paid or failed now would race the provider's answer (a
 * payout recorded failed, its hold returned, that the provider then sends). Checked on the row `act`
 * read; the write checks again in its transaction that nothing was written since (`unchangedSince`).
 */
export function notBeingSent(row: TxRow, now: number) {
  if (row.payoutSendingUntil <= now) return
  throw refuse(
    'PAYOUT_BEING_SENT',
    `the payout of withdrawal ${row.id} is being sent (its approval waits on ${row.provider}'s answer, until ${new Date(row.payoutSendingUntil).toISOString()} at most): try again once it has answered`,
  )
}

/**
 * 409 TRANSACTION_STATE_CONFLICT, naming its current state, when the withdrawal changed since `act` read
 * it for notBeingSent: re-read in the caller's (write) transaction, which holds it until the commit. Its
 * lease may lapse while the provider answers: the sender's answer (the provider's reference written, the
 * lease ended, the status kept) then commits between staff's read and staff's write, and a payout the
 * provider accepted would be recorded failed (its hold returned) on what was read before its answer.
 */
export async function unchangedSince(tx: Tx, read: TxRow) {
  const row = await rowIn(tx, read)
  if (
    row.status === read.status &&
    row.payoutSendingUntil === read.payoutSendingUntil &&
    row.providerRef === read.providerRef
  )
    return
  const accepted = row.providerRef && row.providerRef !== read.providerRef
  throw refuse(
    'TRANSACTION_STATE_CONFLICT',
    `withdrawal ${row.id} changed while this was asked${accepted ? ` (${row.provider} accepted its payout: ${row.providerRef})` : ''}: it is ${txStatusName(row.kind, row.status)} now and nothing was recorded; check what was sent, then try again`,
  )
}

export async function rowOf(ctx: CashierCtx, brandId: number, id: number) {
  const [row] = await ctx.db
    .select()
    .from(cashierTransactions)
    .where(and(eq(cashierTransactions.id, id), eq(cashierTransactions.brandId, brandId)))
  if (!row) throw txNotFound()
  return row
}

/**
 * The transaction as the caller's transaction sees it: what `act` read before may have changed since (a
 * provider's refund or late capture changes what a review may credit while staff's request is on its
 * way). Write transactions take turns, so what this reads holds until the commit.
 */
export async function rowIn(tx: Tx, read: TxRow) {
  const [row] = await tx
    .select()
    .from(cashierTransactions)
    .where(and(eq(cashierTransactions.id, read.id), eq(cashierTransactions.brandId, read.brandId)))
  if (!row) throw txNotFound()
  return row
}

export const staff = (id: number) => `staff:${id}`

/** Who acts on which transaction: the brand's staff member, and the transaction the path names. */
export interface StaffAction {
  brandId: number
  staffId: number
  id: number
}

/** Runs one staff action on a transaction; 409 when its status does not allow it. Its staff view. */
export async function act(
  ctx: CashierCtx,
  brandId: number,
  id: number,
  what: string,
  fn: (row: TxRow, now: number) => Promise<TxRow | null>,
) {
  await attempt(ctx, brandId, id, what, fn)
  return staffViewOf(ctx, brandId, id)
}

/** `act` without its answer: for an action that goes on after it (an approval sends the payout). */
export async function attempt(
  ctx: CashierCtx,
  brandId: number,
  id: number,
  what: string,
  fn: (row: TxRow, now: number) => Promise<TxRow | null>,
) {
  const row = await rowOf(ctx, brandId, id)
  // another writer moved it within this one's transaction (all of it rolled back): as a refusal by state
  const done = await fn(row, ctx.clock.now()).catch((e: unknown) => {
    if (e instanceof LostRace) return null
    throw e
  })
  // named in the state that refused it: another action may have moved it since it was read
  if (!done) throw wrongState(await rowOf(ctx, brandId, id), what)
}
