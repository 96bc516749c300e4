import type { Tx } from '../../../kernel/db/client'
import type { Work } from '../../../kernel/db/unit-of-work'
import type { UseCase } from '../../../kernel/use-case'
import type { CashierCtx } from '../context'
import { move, releaseHold, type TxRow } from '../transactions'
import { act, notBeingSent, type StaffAction, staff, unchangedSince } from './shared'

/**
 * Fails a withdrawal's payout and returns its hold, in the caller's transaction; null when its status
 * no longer allows it (nothing changes). Its send lease ends with it.
 */
export async function failPayout(
  ctx: CashierCtx,
  tx: Tx,
  work: Work,
  row: TxRow,
  actor: string,
  now: number,
  reason: string,
) {
  const r = await move(tx, row, 'payout_failed', actor, now, { reason, payoutSendingUntil: 0 }, reason)
  if (r) await releaseHold(ctx, tx, work, r, actor)
  return r
}

/**
 * Staff record a failed payout (the bank returned a wire, the provider says so): refused with 409
 * PAYOUT_BEING_SENT while the approval still waits on the provider's answer (`notBeingSent`), and with 409
 * TRANSACTION_STATE_CONFLICT when the sender's answer was written since it was read (`unchangedSince`).
 */
export const payoutFailed = ({
  ctx,
  brandId,
  staffId,
  id,
  input: { reason },
}: UseCase<CashierCtx, { reason: string }, StaffAction>) =>
  act(ctx, brandId, id, 'fail its payout', async (row, now) => {
    notBeingSent(row, now)
    return ctx.uow.run(async (tx, work) => {
      await unchangedSince(tx, row)
      return failPayout(ctx, tx, work, row, staff(staffId), now, reason)
    })
  })
