import { and, eq } from 'drizzle-orm'
import type { UseCase } from '../../../kernel/use-case'
import type { CashierCtx } from '../context'
import { STATUS } from '../domain/status'
import { cashierHistory } from '../schema'
import { move, releaseHold, viewOf, wrongState } from '../transactions'
import { ownTransaction, type SessionScope } from './shared'

/**
 * POST /cashier/transactions/{id}/cancel: the customer takes back a withdrawal staff have not decided yet
 * (pending_approval): it ends cancelled and its held funds return to the balance, as a rejection's do,
 * in one transaction. Only the customer's own withdrawal of this brand (in the query: another's is 404);
 * once approved the payout is under way and only staff can stop it (409 TRANSACTION_STATE_CONFLICT).
 * Asked again (a retry after a lost answer, or two at once), a withdrawal the customer cancelled answers
 * as the first did; one staff rejected is 409.
 */
export async function cancelWithdrawal({
  ctx,
  brand,
  session,
  id,
}: UseCase<CashierCtx, undefined, SessionScope & { id: number }>) {
  const own = () => ownTransaction(ctx, { brand, session }, id, 'withdrawal')
  const row = await own()
  const done = await ctx.uow.run(async (tx, work) => {
    // the history says `customer`, as for the request; the ledger names which one
    const r = await move(tx, row, 'cancel', 'customer', ctx.clock.now(), {
      reason: 'cancelled by the customer',
    })
    if (r) await releaseHold(ctx, tx, work, r, `customer:${session.customerId}`)
    return r
  })
  if (!done) {
    // named in the state that refused it: staff may have decided it since it was read
    const now = await own()
    if (now.status !== STATUS.cancelled || !(await cancelledByCustomer(ctx, id)))
      throw wrongState(now, 'cancel it')
  }
  return viewOf(ctx, brand.id, id)
}

/** Whether the transaction's move to cancelled was the customer's. */
export async function cancelledByCustomer(ctx: CashierCtx, id: number) {
  const [mine] = await ctx.db
    .select({ id: cashierHistory.id })
    .from(cashierHistory)
    .where(
      and(
        eq(cashierHistory.transactionId, id),
        eq(cashierHistory.toStatus, STATUS.cancelled),
        eq(cashierHistory.actor, 'customer'),
      ),
    )
    .limit(1)
  return !!mine
}
