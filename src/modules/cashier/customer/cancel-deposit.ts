import type { UseCase } from '../../../kernel/use-case'
import { endUnpaidSession } from '../backoffice'
import type { CashierCtx } from '../context'
import { STATUS } from '../domain/status'
import { refuse } from '../errors'
import { type TxRow, viewOf, wrongState } from '../transactions'
import { cancelledByCustomer, cancelWithdrawal } from './cancel-withdrawal'
import { ownTransaction, type SessionScope } from './shared'

/**
 * POST /cashier/transactions/{id}/cancel: the customer's own withdrawal (cancelWithdrawal) or deposit.
 * A deposit is cancelled while it waits for a payment nobody made (pending_payment): a card payment's
 * session is ended at the provider first, which it does only while unpaid, so a payment made meanwhile
 * is credited rather than lost (409 then); a bank wire's is cancelled at once (a transfer that still
 * arrives goes to review when staff confirm it). Cancelled, it no longer counts toward the KYC limit.
 */
export async function cancelTransaction(args: UseCase<CashierCtx, undefined, SessionScope & { id: number }>) {
  const row = await ownTransaction(args.ctx, args, args.id)
  return row.kind === 'withdrawal' ? cancelWithdrawal(args) : cancelDeposit(args.ctx, args, row)
}

async function cancelDeposit(ctx: CashierCtx, scope: SessionScope, row: TxRow) {
  if (row.status === STATUS.pending_payment) {
    const r = await endUnpaidSession(ctx, row, {
      action: 'cancel',
      actor: 'customer',
      reason: 'cancelled by the customer',
      note: 'cancelled by the customer',
    })
    if (r === 'paid')
      throw refuse(
        'TRANSACTION_STATE_CONFLICT',
        `deposit ${row.id} was paid or is being paid at the provider: it is credited once confirmed`,
      )
    if (r === 'unknown')
      throw refuse(
        'PROVIDER_UNAVAILABLE',
        'the payment provider could not end the payment session; try again later',
      )
    if (r === 'ended') return viewOf(ctx, row.brandId, row.id)
  }
  // asked again (a retry after a lost answer, or two at once): one the customer cancelled answers the same
  const now = await ownTransaction(ctx, scope, row.id)
  if (now.status !== STATUS.cancelled || !(await cancelledByCustomer(ctx, row.id)))
    throw wrongState(now, 'cancel it')
  return viewOf(ctx, row.brandId, row.id)
}
