import { and, desc, eq, lt } from 'drizzle-orm'
import type { UseCase } from '../../../kernel/use-case'
import type { CashierCtx } from '../context'
import type { StatusName, WithdrawalName } from '../domain/status'
import { cashierTransactions } from '../schema'
import { pageOf, staffTxView, staffViewOf, statusIs } from '../transactions'
import { rowOf } from './shared'

export async function searchTransactions({
  ctx,
  brandId,
  input: q,
}: UseCase<
  CashierCtx,
  {
    status?: StatusName | WithdrawalName
    kind?: 'deposit' | 'withdrawal'
    customer?: number
    login?: number
    flagged?: number
    cursor?: number
    limit?: number
  },
  { brandId: number }
>) {
  const limit = q.limit ?? 50
  const rows = await ctx.db
    .select()
    .from(cashierTransactions)
    .where(
      and(
        eq(cashierTransactions.brandId, brandId),
        q.status ? statusIs(q.status) : undefined,
        q.kind ? eq(cashierTransactions.kind, q.kind) : undefined,
        q.customer !== undefined ? eq(cashierTransactions.customerId, q.customer) : undefined,
        q.login !== undefined ? eq(cashierTransactions.login, q.login) : undefined,
        q.flagged !== undefined ? eq(cashierTransactions.flagged, q.flagged) : undefined,
        q.cursor ? lt(cashierTransactions.id, q.cursor) : undefined,
      ),
    )
    .orderBy(desc(cashierTransactions.id))
    .limit(limit + 1)
  return pageOf(ctx, rows, limit, staffTxView)
}

export async function staffTransaction({
  ctx,
  brandId,
  id,
}: UseCase<CashierCtx, undefined, { brandId: number; id: number }>) {
  await rowOf(ctx, brandId, id)
  return staffViewOf(ctx, brandId, id)
}
