import { and, asc, eq, gt, lte } from 'drizzle-orm'
import type { CashierCtx } from '../context'
import { STATUS } from '../domain/status'
import { cashierTransactions } from '../schema'
import { move, noteAfter } from '../transactions'
import { rowIn } from './shared'

/**
 * Withdrawals one run moves at most (a lapsed lease is rare: an instance that died mid-send), each in its
 * own transaction of a few statements. At the edge every job due in a scheduled() invocation shares its
 * 1,000 subrequests: a run there moves 5 and the rest wait for the next minute.
 */
export const MAX_LAPSED = { edge: 5, server: 100 }

/**
 * Withdrawals whose payout send lease lapsed with no answer written (the approving instance died, or
 * its call to the provider outlasted the lease): the money may have left, so each keeps its hold and
 * moves to manual_review, flagged, as a send with no answer does; staff check with the provider and
 * record it paid or failed. Conditional on the lease read (and the status): an answer the sender writes
 * first wins, and a later one finds it moved and is added to the staff note instead. Part of the
 * `cashier.reconcile` job; the number moved.
 */
export async function holdLapsedPayouts(ctx: CashierCtx, now: number) {
  const lapsed = await ctx.db
    .select()
    .from(cashierTransactions)
    .where(
      and(
        eq(cashierTransactions.status, STATUS.provider_confirmed),
        eq(cashierTransactions.kind, 'withdrawal'),
        gt(cashierTransactions.payoutSendingUntil, 0),
        lte(cashierTransactions.payoutSendingUntil, now),
      ),
    )
    .orderBy(asc(cashierTransactions.id))
    .limit(ctx.edge ? MAX_LAPSED.edge : MAX_LAPSED.server)
  let moved = 0
  for (const read of lapsed) {
    const note = `the payout was being sent through ${read.provider} and its send lease lapsed with no answer written (the sending instance stopped, or the provider did not answer in time): it may have been sent; the hold is kept. Check with the provider, then mark it paid or its payout failed`
    const done = await ctx.uow.run(async (tx) => {
      const row = await rowIn(tx, read)
      if (row.status !== STATUS.provider_confirmed || row.payoutSendingUntil !== read.payoutSendingUntil)
        return null
      return move(
        tx,
        row,
        'payout_unknown',
        'system',
        now,
        {
          flagged: 1,
          staffNote: noteAfter(row.staffNote, note),
          reason: 'the payout is being checked',
          payoutSendingUntil: 0,
        },
        'payout send lease lapsed with no answer',
      )
    })
    if (done) moved++
  }
  return moved
}
