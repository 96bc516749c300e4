import type { CashierCtx } from '../context'
import { move, releaseHold } from '../transactions'
import { act, staff } from './shared'

export const payoutFailed = (ctx: CashierCtx, brandId: number, staffId: number, id: number, reason: string) =>
  act(ctx, brandId, id, 'fail its payout', (row, now) =>
    ctx.uow.run(async (tx, work) => {
      const r = await move(tx, row, 'payout_failed', staff(staffId), now, { reason }, reason)
      if (r) await releaseHold(ctx, tx, work, r, staff(staffId))
      return r
    }),
  )
