import type { UseCase } from '../../../kernel/use-case'
import type { CashierCtx } from '../context'
import { STATUS } from '../domain/status'
import { credit, move } from '../transactions'
import { act, type StaffAction, staff } from './shared'

/** Manual review: credit the deposit, or close it as failed. */
export const resolveReview = ({
  ctx,
  brandId,
  staffId,
  id,
  input,
}: UseCase<CashierCtx, { decision: 'credit' | 'fail'; note: string; reason?: string }, StaffAction>) =>
  act(ctx, brandId, id, `resolve it (${input.decision})`, (row, now) =>
    ctx.uow.run(async (tx, work) => {
      if (row.kind !== 'deposit') return null
      if (input.decision === 'fail')
        return move(
          tx,
          row,
          'resolve_fail',
          staff(staffId),
          now,
          { reason: input.reason ?? 'the payment failed', staffNote: input.note },
          input.note,
        )
      const r = await credit(
        ctx,
        tx,
        work,
        { ...row, staffNote: input.note },
        staff(staffId),
        now,
        'resolve_credit',
      )
      return r?.status === STATUS.credited ? r : null
    }),
  )
