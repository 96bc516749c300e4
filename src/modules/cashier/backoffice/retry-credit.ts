import type { UseCase } from '../../../kernel/use-case'
import type { CashierCtx } from '../context'
import { STATUS } from '../domain/status'
import { credit } from '../transactions'
import { act, type StaffAction, staff } from './shared'

/** Retries the credit of a credit_failed deposit now. */
export const retryCredit = ({
  ctx,
  brandId,
  staffId,
  id,
  input,
}: UseCase<CashierCtx, { note?: string }, StaffAction>) =>
  act(ctx, brandId, id, 'retry the credit', (row, now) =>
    ctx.uow.run(async (tx, work) => {
      if (row.status !== STATUS.credit_failed) return null
      const r = await credit(ctx, tx, work, row, staff(staffId), now, 'credit', input.note ?? '')
      return r?.status === STATUS.credited ? r : null
    }),
  )
