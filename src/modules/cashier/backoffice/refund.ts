import type { UseCase } from '../../../kernel/use-case'
import type { CashierCtx } from '../context'
import { reverse } from '../transactions'
import { act, type StaffAction, staff } from './shared'

/** Refunds a credited deposit to its payer: the balance must cover it. */
export const refund = ({
  ctx,
  brandId,
  staffId,
  id,
  input,
}: UseCase<CashierCtx, { note: string }, StaffAction>) =>
  act(ctx, brandId, id, 'refund it', (row, now) =>
    ctx.uow.run((tx, work) =>
      row.kind === 'deposit'
        ? reverse(ctx, tx, work, row, 'refund', staff(staffId), now, input.note)
        : Promise.resolve(null),
    ),
  )
