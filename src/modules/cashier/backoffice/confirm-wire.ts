import type { UseCase } from '../../../kernel/use-case'
import { fromMinor, toMinor } from '../../accounts'
import type { CashierCtx } from '../context'
import { STATUS } from '../domain/status'
import { refuse } from '../errors'
import { credit, move } from '../transactions'
import { act, type StaffAction, staff } from './shared'

/** A bank wire arrived: the amount received decides between crediting and manual review. */
export const confirmWire = ({
  ctx,
  brandId,
  staffId,
  id,
  input,
}: UseCase<CashierCtx, { amount: number }, StaffAction>) =>
  act(ctx, brandId, id, 'confirm a wire', async (row, now) => {
    if (row.provider !== 'wire' || row.kind !== 'deposit') return null
    const received = toMinor(input.amount, row.currency)
    if (received === null || received <= 0)
      throw refuse('INVALID_DATA', `amount: a positive amount with the decimals of ${row.currency}`)
    return ctx.uow.run(async (tx, work) => {
      if (received !== row.amount)
        return move(
          tx,
          row,
          'mismatch',
          staff(staffId),
          now,
          {
            providerAmount: received,
            providerCurrency: row.currency,
            reason: 'the transfer is being reviewed',
          },
          `received ${fromMinor(received, row.currency)} ${row.currency}`,
        )
      const r = await move(tx, row, 'confirmed', staff(staffId), now, {}, 'wire received')
      // a wire that arrives for a deposit the customer cancelled goes to review: answered as it is now
      if (r?.status !== STATUS.provider_confirmed) return r
      return credit(ctx, tx, work, r, staff(staffId), now)
    })
  })
