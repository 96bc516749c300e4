import type { UseCase } from '../../../kernel/use-case'
import type { CashierCtx } from '../context'
import { WithdrawalPaid } from '../events'
import { holdOf, money, move } from '../transactions'
import { act, type StaffAction, staff } from './shared'

export const markPaid = ({
  ctx,
  brandId,
  staffId,
  id,
  input,
}: UseCase<CashierCtx, { note?: string }, StaffAction>) =>
  act(ctx, brandId, id, 'mark it paid', (row, now) =>
    ctx.uow.run(async (tx, work) => {
      const r = await move(tx, row, 'paid', staff(staffId), now, {}, input.note || 'paid')
      if (r) work.emit(WithdrawalPaid, r.brandId, { ...money(r), hold: holdOf(r) })
      return r
    }),
  )
