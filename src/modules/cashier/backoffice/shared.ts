import { and, eq } from 'drizzle-orm'
import type { Tx } from '../../../kernel/db/client'
import type { CashierCtx } from '../context'
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
 * 409 PAYOUT_BEING_SENT while the withdrawal's payout is being sent (its approval waits on the provider's
 * answer, its lease not lapsed): recording it paid or failed now would race the provider's answer (a
 * payout recorded failed, its hold returned, that the provider then sends). The lease is set with the
 * status the approval commits and only ends with a status change or the sender's own answer, so what
 * `act` read holds for the conditional move.
 */
export function notBeingSent(row: TxRow, now: number) {
  if (row.payoutSendingUntil <= now) return
  throw refuse(
    'PAYOUT_BEING_SENT',
    `the payout of withdrawal ${row.id} is being sent (its approval waits on ${row.provider}'s answer, until ${new Date(row.payoutSendingUntil).toISOString()} at most): try again once it has answered`,
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

/** Runs one staff action on a transaction; 409 when its status does not allow it. */
export async function act(
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
  return staffViewOf(ctx, brandId, id)
}
