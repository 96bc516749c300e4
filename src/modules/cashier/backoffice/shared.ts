import { and, eq } from 'drizzle-orm'
import type { Tx } from '../../../kernel/db/client'
import type { CashierCtx } from '../context'
import { cashierTransactions } from '../schema'
import { LostRace, staffViewOf, type TxRow, txNotFound, wrongState } from '../transactions'

export const MAX_CREDIT_ATTEMPTS = 5

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
