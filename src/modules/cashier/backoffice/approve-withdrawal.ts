import { eq } from 'drizzle-orm'
import type { UseCase } from '../../../kernel/use-case'
import type { CashierCtx } from '../context'
import { cashierTransactions } from '../schema'
import { move } from '../transactions'
import { payoutFailed } from './payout-failed'
import { act, rowOf, type StaffAction, staff } from './shared'

/** Approves a withdrawal and sends its payout through the provider module. */
export async function approveWithdrawal({
  ctx,
  brandId,
  staffId,
  id,
  input,
}: UseCase<CashierCtx, { note?: string }, StaffAction>) {
  const note = input.note ?? ''
  const view = await act(ctx, brandId, id, 'approve it', (row, now) =>
    ctx.db.transaction((tx) =>
      row.kind === 'withdrawal'
        ? move(tx, row, 'approve', staff(staffId), now, { staffNote: note }, note)
        : Promise.resolve(null),
    ),
  )
  const row = await rowOf(ctx, brandId, id)
  try {
    const p = await ctx.providers
      .get(row.provider)!
      .startPayout({ transactionId: row.id, amount: row.amount - row.fee, currency: row.currency })
    await ctx.db
      .update(cashierTransactions)
      .set({ providerRef: p.providerRef })
      .where(eq(cashierTransactions.id, id))
  } catch (e) {
    ctx.logger.log('error', 'cashier payout failed to start', { transaction: id, err: String(e) })
    return payoutFailed({ ctx, brandId, staffId, id, input: { reason: 'the payout could not be sent' } })
  }
  return { ...view, provider_ref: (await rowOf(ctx, brandId, id)).providerRef }
}
