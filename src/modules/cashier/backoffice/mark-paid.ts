import type { CashierCtx } from '../context'
import { WithdrawalPaid } from '../events'
import { money, move } from '../transactions'
import { act, staff } from './shared'

export const markPaid = (ctx: CashierCtx, brandId: number, staffId: number, id: number, note: string) =>
  act(ctx, brandId, id, 'mark it paid', (row, now) =>
    ctx.uow.run(async (tx, work) => {
      const r = await move(tx, row, 'paid', staff(staffId), now, {}, note || 'paid')
      if (r) work.emit(WithdrawalPaid, r.brandId, money(r))
      return r
    }),
  )
