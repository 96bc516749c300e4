import { eq } from 'drizzle-orm'
import type { UseCase } from '../../../kernel/use-case'
import type { CashierCtx } from '../context'
import { STATUS } from '../domain/status'
import { cashierTransactions } from '../schema'
import { credit, move } from '../transactions'
import { MAX_CREDIT_ATTEMPTS } from './shared'

/** Job: credit_failed deposits are credited again, then after MAX_CREDIT_ATTEMPTS handed to a person. */
export async function retryCredits({ ctx }: UseCase<CashierCtx>) {
  const rows = await ctx.db
    .select()
    .from(cashierTransactions)
    .where(eq(cashierTransactions.status, STATUS.credit_failed))
    .limit(100)
  for (const row of rows)
    await ctx.uow
      .run(async (tx, work) => {
        const now = ctx.clock.now()
        if (row.creditAttempts >= MAX_CREDIT_ATTEMPTS)
          return move(
            tx,
            row,
            'give_up',
            'system',
            now,
            { reason: 'the payment is being reviewed' },
            'credit retries exhausted',
          )
        return credit(ctx, tx, work, row, 'system', now)
      })
      .catch((e) => ctx.logger.log('warn', 'cashier credit retry', { transaction: row.id, err: String(e) }))
  return rows.length
}
