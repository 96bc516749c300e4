import { and, eq } from 'drizzle-orm'
import type { Tx } from '../../../kernel/db/client'
import type { UseCase } from '../../../kernel/use-case'
import { fromMinor, toMinor } from '../../accounts'
import type { CashierCtx } from '../context'
import { STATUS } from '../domain/status'
import { refuse } from '../errors'
import { cashierMethods } from '../schema'
import { credit, move, noteAfter, type TxRow } from '../transactions'
import { act, rowIn, type StaffAction, staff } from './shared'

/**
 * What a reviewed deposit credits: the amount the provider or the bank confirmed, when one was recorded
 * (crediting the amount asked for credited money that never arrived), less what the provider took back
 * before the credit (a refund or chargeback recorded in review: `provider_amount` is what it still
 * holds), with the fee in proportion. One confirmed in another currency cannot be credited as it is:
 * staff close it as failed and book it.
 */
function receivedOf(row: TxRow) {
  const received = row.providerAmount
  if (received === null) return { amount: row.amount, fee: row.fee }
  if (row.providerCurrency !== null && row.providerCurrency !== row.currency)
    throw refuse(
      'TRANSACTION_STATE_CONFLICT',
      `the provider confirmed ${row.providerCurrency}, not ${row.currency}: close it as failed and book the money by hand`,
    )
  if (received <= 0)
    throw refuse(
      'TRANSACTION_STATE_CONFLICT',
      row.flagged === 1
        ? 'the provider holds nothing for it (it took the money back, or has not confirmed any): close it as failed'
        : 'the provider confirmed nothing: close it as failed',
    )
  return { amount: received, fee: Math.min(received, Math.round((row.fee * received) / row.amount)) }
}

/**
 * No review credits more than the deposit's method takes at once: a provider's figure above it is a
 * mistake or an attack (a customer asking 10 and a figure of a billion), not money to credit by a click.
 */
async function withinMethod(tx: Tx, row: TxRow, amount: number) {
  const [m] = await tx
    .select({ max: cashierMethods.maxAmount })
    .from(cashierMethods)
    .where(and(eq(cashierMethods.brandId, row.brandId), eq(cashierMethods.code, row.method)))
  const max = m ? toMinor(m.max, row.currency) : null
  if (max !== null && amount > max)
    throw refuse(
      'TRANSACTION_STATE_CONFLICT',
      `the provider confirmed ${fromMinor(amount, row.currency)} ${row.currency}, more than ${row.method} takes (${m!.max}): close it as failed and book the money by hand`,
    )
}

/**
 * Manual review: credit the amount received, or close the deposit as failed. Staff's note is added to
 * `staff_note` (noteAfter), so what the provider's flags noted before stays in view beside the decision.
 */
export const resolveReview = ({
  ctx,
  brandId,
  staffId,
  id,
  input,
}: UseCase<CashierCtx, { decision: 'credit' | 'fail'; note: string; reason?: string }, StaffAction>) =>
  act(ctx, brandId, id, `resolve it (${input.decision})`, (read, now) =>
    ctx.uow.run(async (tx, work) => {
      // what the provider holds is read where the credit is written: a refund or a late capture that
      // committed since the request read the deposit counts (no credit of money it took back)
      const row = await rowIn(tx, read)
      if (row.kind !== 'deposit') return null
      // added after the notes it holds (the provider's, an earlier 'short by X'), never replacing them
      const staffNote = input.note.trim() ? noteAfter(row.staffNote, input.note) : row.staffNote
      if (input.decision === 'fail')
        return move(
          tx,
          row,
          'resolve_fail',
          staff(staffId),
          now,
          { reason: input.reason?.trim() || 'the payment failed', staffNote },
          input.note,
        )
      const { amount, fee } = receivedOf(row)
      await withinMethod(tx, row, amount)
      const r = await credit(
        ctx,
        tx,
        work,
        { ...row, amount, fee, staffNote },
        staff(staffId),
        now,
        'resolve_credit',
        input.note,
        { amount, fee, staffNote },
      )
      return r?.status === STATUS.credited ? r : null
    }),
  )
