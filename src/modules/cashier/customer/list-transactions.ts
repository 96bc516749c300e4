import { and, desc, eq, gte, lt, lte } from 'drizzle-orm'
import type { UseCase } from '../../../kernel/use-case'
import type { CashierCtx } from '../context'
import type { StatusName, WithdrawalName } from '../domain/status'
import { cashierTransactions } from '../schema'
import { pageOf, statusIs, txView, viewOf } from '../transactions'
import { ownTransaction, type SessionScope } from './shared'

/** GET /cashier/transactions: the customer's own, newest first, with filters and a cursor. */
export async function customerTransactions({
  ctx,
  brand,
  session,
  input: q,
}: UseCase<
  CashierCtx,
  {
    login?: number
    kind?: 'deposit' | 'withdrawal'
    status?: StatusName | WithdrawalName
    from?: number
    to?: number
    cursor?: number
    limit?: number
  },
  SessionScope
>) {
  const limit = q.limit ?? 50
  const rows = await ctx.db
    .select()
    .from(cashierTransactions)
    .where(
      and(
        eq(cashierTransactions.brandId, brand.id),
        eq(cashierTransactions.customerId, session.customerId!),
        q.login !== undefined ? eq(cashierTransactions.login, q.login) : undefined,
        q.kind ? eq(cashierTransactions.kind, q.kind) : undefined,
        q.status ? statusIs(q.status) : undefined,
        q.from !== undefined ? gte(cashierTransactions.createdAt, q.from * 1000) : undefined,
        q.to !== undefined ? lte(cashierTransactions.createdAt, q.to * 1000 + 999) : undefined,
        q.cursor ? lt(cashierTransactions.id, q.cursor) : undefined,
      ),
    )
    .orderBy(desc(cashierTransactions.id))
    .limit(limit + 1)
  return pageOf(ctx, rows, limit, txView)
}

export async function customerTransaction({
  ctx,
  brand,
  session,
  id,
}: UseCase<CashierCtx, undefined, SessionScope & { id: number }>) {
  await ownTransaction(ctx, { brand, session }, id)
  return viewOf(ctx, brand.id, id)
}
