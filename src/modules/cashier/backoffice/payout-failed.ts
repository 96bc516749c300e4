import type { UseCase } from '../../../kernel/use-case'
import type { CashierCtx } from '../context'
import { move, releaseHold } from '../transactions'
import { act, type StaffAction, staff } from './shared'

export const payoutFailed = ({
  ctx,
  brandId,
  staffId,
  id,
  input: { reason },
}: UseCase<CashierCtx, { reason: string }, StaffAction>) =>
  act(ctx, brandId, id, 'fail its payout', (row, now) =>
    ctx.uow.run(async (tx, work) => {
      const r = await move(tx, row, 'payout_failed', staff(staffId), now, { reason }, reason)
      if (r) await releaseHold(ctx, tx, work, r, staff(staffId))
      return r
    }),
  )
