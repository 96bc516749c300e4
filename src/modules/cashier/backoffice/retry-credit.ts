import type { CashierCtx } from '../context'
import { STATUS } from '../domain/status'
import { credit } from '../transactions'
import { act, staff } from './shared'

/** Retries the credit of a credit_failed deposit now. */
export const retryCredit = (ctx: CashierCtx, brandId: number, staffId: number, id: number, note: string) =>
  act(ctx, brandId, id, 'retry the credit', (row, now) =>
    ctx.uow.run(async (tx, work) => {
      if (row.status !== STATUS.credit_failed) return null
      const r = await credit(ctx, tx, work, row, staff(staffId), now, 'credit', note)
      return r?.status === STATUS.credited ? r : null
    }),
  )
