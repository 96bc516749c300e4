import type { UseCase } from '../../../kernel/use-case'
import type { CashierCtx } from '../context'
import { LostRace, move, releaseHold, viewOf, wrongState } from '../transactions'
import { ownTransaction, type SessionScope } from './shared'

/**
 * POST /cashier/transactions/{id}/cancel: the customer takes back a withdrawal staff have not decided yet
 * (pending_approval): it ends cancelled and its held funds return to the balance, as a rejection's do,
 * in one transaction. Only the customer's own withdrawal of this brand (in the query: another's is 404);
 * once approved the payout is under way and only staff can stop it (409 TRANSACTION_STATE_CONFLICT).
 */
export async function cancelWithdrawal({
  ctx,
  brand,
  session,
  id,
}: UseCase<CashierCtx, undefined, SessionScope & { id: number }>) {
  const own = () => ownTransaction(ctx, { brand, session }, id, 'withdrawal')
  const row = await own()
  const actor = `customer:${session.customerId}`
  const done = await ctx.uow
    .run(async (tx, work) => {
      const r = await move(tx, row, 'cancel', actor, ctx.clock.now(), { reason: 'cancelled by the customer' })
      if (r) await releaseHold(ctx, tx, work, r, actor)
      return r
    })
    .catch((e: unknown) => {
      if (e instanceof LostRace) return null
      throw e
    })
  // named in the state that refused it: staff may have decided it since it was read
  if (!done) throw wrongState(await own(), 'cancel it')
  return viewOf(ctx, id)
}
