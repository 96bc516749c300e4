import type { UseCase } from '../../../kernel/use-case'
import type { CashierCtx } from '../context'
import { WithdrawalPaid } from '../events'
import { holdOf, money, move } from '../transactions'
import { act, notBeingSent, type StaffAction, staff, unchangedSince } from './shared'

/**
 * Staff record a withdrawal's payout settled: refused with 409 PAYOUT_BEING_SENT while the approval
 * still waits on the provider's answer (`notBeingSent`): the provider may yet refuse it; and with 409
 * TRANSACTION_STATE_CONFLICT when the sender's answer was written since it was read (`unchangedSince`).
 */
export const markPaid = ({
  ctx,
  brandId,
  staffId,
  id,
  input,
}: UseCase<CashierCtx, { note?: string }, StaffAction>) =>
  act(ctx, brandId, id, 'mark it paid', async (row, now) => {
    notBeingSent(row, now)
    return ctx.uow.run(async (tx, work) => {
      await unchangedSince(tx, row)
      const r = await move(
        tx,
        row,
        'paid',
        staff(staffId),
        now,
        { payoutSendingUntil: 0 },
        input.note || 'paid',
      )
      if (r) work.emit(WithdrawalPaid, r.brandId, { ...money(r), hold: holdOf(r) })
      return r
    })
  })
