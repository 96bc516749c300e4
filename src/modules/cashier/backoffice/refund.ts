import type { CashierCtx } from '../context'
import { reverse } from '../transactions'
import { act, staff } from './shared'

/** Refunds a credited deposit to its payer: the balance must cover it. */
export const refund = (ctx: CashierCtx, brandId: number, staffId: number, id: number, note: string) =>
  act(ctx, brandId, id, 'refund it', (row, now) =>
    ctx.uow.run((tx, work) =>
      row.kind === 'deposit'
        ? reverse(ctx, tx, work, row, 'refund', staff(staffId), now, note)
        : Promise.resolve(null),
    ),
  )
