import { asc, eq } from 'drizzle-orm'
import type { UseCase } from '../../../kernel/use-case'
import type { CashierCtx } from '../context'
import { STATUS } from '../domain/status'
import { cashierTransactions } from '../schema'
import { credit, move } from '../transactions'
import { MAX_CREDIT_ATTEMPTS } from './shared'

/**
 * Deposits one run of `cashier.credit-retry` takes at most, each in a transaction of its own. At the edge
 * (a Worker's scheduled(), every minute) every job due shares one invocation's 1,000 subrequests, and
 * each statement is one: a run there takes fewer, the rest are left to the next.
 */
export const RETRIES_PER_RUN = { server: 100, edge: 5 }

/**
 * Job: credit_failed deposits are credited again, then after MAX_CREDIT_ATTEMPTS handed to a person;
 * RETRIES_PER_RUN a run, the longest untouched first (its status index's order).
 */
export async function retryCredits({ ctx }: UseCase<CashierCtx>) {
  const rows = await ctx.db
    .select()
    .from(cashierTransactions)
    .where(eq(cashierTransactions.status, STATUS.credit_failed))
    .orderBy(asc(cashierTransactions.updatedAt))
    .limit(ctx.edge ? RETRIES_PER_RUN.edge : RETRIES_PER_RUN.server)
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
