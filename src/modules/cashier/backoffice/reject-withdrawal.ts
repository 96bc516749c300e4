import type { UseCase } from '../../../kernel/use-case'
import type { CashierCtx } from '../context'
import { move, releaseHold } from '../transactions'
import { act, type StaffAction, staff } from './shared'

export const rejectWithdrawal = ({
  ctx,
  brandId,
  staffId,
  id,
  input: { reason },
}: UseCase<CashierCtx, { reason: string }, StaffAction>) =>
  act(ctx, brandId, id, 'reject it', (row, now) =>
    ctx.uow.run(async (tx, work) => {
      if (row.kind !== 'withdrawal') return null
      const r = await move(tx, row, 'reject', staff(staffId), now, { reason }, reason)
      if (r) await releaseHold(ctx, tx, work, r, staff(staffId))
      return r
    }),
  )
