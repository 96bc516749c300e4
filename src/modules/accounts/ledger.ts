import { and, eq, sql } from 'drizzle-orm'
import type { Tx } from '../../kernel/db/client'
import { isUniqueViolation } from '../../kernel/db/errors'
import type { Work } from '../../kernel/db/unit-of-work'
import { ApiError, invalid } from '../../kernel/http/errors'
import type { AccountsCtx } from './context'
import { fromMinor, toMinor } from './domain/money'
import { BalanceOperation } from './events'
import { accounts, balanceOperations, groups } from './schema'
import { accountNotFound } from './service'

export const OPERATIONS = ['OP_BALANCE_IN', 'OP_BALANCE_OUT', 'OP_CREDIT_IN', 'OP_CREDIT_OUT'] as const
export type Operation = (typeof OPERATIONS)[number]

export interface BalanceOperationInput {
  brandId: number
  login: number
  op: Operation
  /**
   * Positive amount in integer minor units of the account currency (DESIGN rule 3: no amount travels
   * between modules as a float); the sign follows the operation.
   */
  amountMinor: number
  reason: string
  comment?: string
  apiData?: Record<string, unknown>
  idempotencyKey?: string
  createdBy: string
  /** A balance-out that may take the balance below zero (a chargeback takes back what was credited). */
  allowNegative?: boolean
}

type OperationRow = typeof balanceOperations.$inferSelect

export function operationView(row: OperationRow, currency: string) {
  return {
    id: row.id,
    login: row.login,
    op: row.op,
    ticket: row.ticket,
    amount: fromMinor(row.amount, currency),
    balance_after: fromMinor(row.balanceAfter, currency),
    credit_after: fromMinor(row.creditAfter, currency),
    currency,
    reason: row.reason,
    comment: row.comment,
    api_data: row.apiData ? JSON.parse(row.apiData) : null,
    idempotency_key: row.idempotencyKey,
    created_by: row.createdBy,
    created_time: Math.floor(row.createdAt / 1000),
  }
}

/**
 * Posts one ledger row and moves the account total in the same transaction (DESIGN rules 3 and 4):
 * the total changes by a conditional UPDATE that refuses to go below zero, so two concurrent
 * withdrawals can never both pass. A repeated idempotency key returns the first result.
 */
export async function postOperationTx(ctx: AccountsCtx, tx: Tx, work: Work, input: BalanceOperationInput) {
  const [acct] = await tx
    .select({ currency: groups.currency })
    .from(accounts)
    .innerJoin(groups, eq(groups.id, accounts.groupId))
    .where(and(eq(accounts.login, input.login), eq(accounts.brandId, input.brandId)))
  if (!acct) throw accountNotFound()
  const minor = input.amountMinor
  if (!Number.isSafeInteger(minor) || minor <= 0)
    throw invalid(`amount: must be a positive whole number of minor units of ${acct.currency}`)

  if (input.idempotencyKey) {
    const [prior] = await tx
      .select()
      .from(balanceOperations)
      .where(
        and(
          eq(balanceOperations.login, input.login),
          eq(balanceOperations.idempotencyKey, input.idempotencyKey),
        ),
      )
    if (prior) return { row: prior, currency: acct.currency, idempotent: true }
  }

  const isCredit = input.op.startsWith('OP_CREDIT')
  const delta = input.op.endsWith('_IN') ? minor : -minor
  const column = isCredit ? accounts.credit : accounts.balance
  const [after] = await tx
    .update(accounts)
    .set(
      isCredit
        ? { credit: sql`${accounts.credit} + ${delta}` }
        : { balance: sql`${accounts.balance} + ${delta}` },
    )
    .where(
      and(
        eq(accounts.login, input.login),
        eq(accounts.brandId, input.brandId),
        // money in is always taken (it may be what brings a charged-back balance back above zero)
        input.allowNegative || delta > 0 ? undefined : sql`${column} + ${delta} >= 0`,
      ),
    )
    .returning({ balance: accounts.balance, credit: accounts.credit })
  if (!after)
    throw new ApiError(
      400,
      'NOT_ENOUGH_FUNDS',
      `the ${isCredit ? 'credit' : 'balance'} of account ${input.login} is lower than ${fromMinor(minor, acct.currency)}`,
    )
  const now = ctx.clock.now()
  const [row] = await tx
    .insert(balanceOperations)
    .values({
      brandId: input.brandId,
      login: input.login,
      op: input.op,
      amount: delta,
      balanceAfter: after.balance,
      creditAfter: after.credit,
      reason: input.reason,
      comment: input.comment ?? '',
      apiData: input.apiData ? JSON.stringify(input.apiData) : null,
      idempotencyKey: input.idempotencyKey ?? null,
      createdBy: input.createdBy,
      createdAt: now,
    })
    .returning()
  work.emit(BalanceOperation, input.brandId, operationView(row, acct.currency))
  work.after(`account:${input.login}`, () => ctx.accountsRead.invalidateAccount(input.login))
  return { row, currency: acct.currency, idempotent: false }
}

/** A staff balance operation from the HTTP route: the amount in major units, converted here, once. */
export async function postBalanceOperation(
  ctx: AccountsCtx,
  request: Omit<BalanceOperationInput, 'amountMinor'> & { amount: number },
) {
  const { amount, ...rest } = request
  const account = await ctx.accountsRead.account(rest.login)
  const group = account && (await ctx.accountsRead.group(account.groupId))
  if (!account || !group || account.brandId !== rest.brandId) throw accountNotFound()
  const amountMinor = toMinor(amount, group.currency)
  if (amountMinor === null || amountMinor <= 0)
    throw invalid(`amount: must be a positive amount with at most the decimals of ${group.currency}`)
  const input: BalanceOperationInput = { ...rest, amountMinor }
  const post = () => ctx.uow.run((tx, work) => postOperationTx(ctx, tx, work, input))
  let result: Awaited<ReturnType<typeof postOperationTx>>
  try {
    result = await post()
  } catch (e) {
    // Two requests raced with one idempotency key: the unique index let one through; answer with it.
    if (input.idempotencyKey && isUniqueViolation(e)) result = await post()
    else throw e
  }
  return { operation: operationView(result.row, result.currency), idempotent: result.idempotent }
}

/**
 * Books a closed trade's result (profit + swap + commission, signed minor units) as one OP_TRADE ledger
 * row in the closing transaction. Unlike a withdrawal it may take the balance below zero: a stop-out
 * can close at a loss larger than the deposit, and the ledger must still say so exactly.
 */
export async function postTradeResultTx(
  tx: Tx,
  input: { brandId: number; login: number; amount: number; ticket: number; comment: string; now: number },
) {
  const [after] = await tx
    .update(accounts)
    .set({ balance: sql`${accounts.balance} + ${input.amount}` })
    .where(and(eq(accounts.login, input.login), eq(accounts.brandId, input.brandId)))
    .returning({ balance: accounts.balance, credit: accounts.credit })
  if (!after) throw accountNotFound()
  await tx.insert(balanceOperations).values({
    brandId: input.brandId,
    login: input.login,
    op: 'OP_TRADE',
    ticket: input.ticket,
    amount: input.amount,
    balanceAfter: after.balance,
    creditAfter: after.credit,
    reason: 'TR_REASON_TRADE',
    comment: input.comment,
    createdBy: 'trading',
    createdAt: input.now,
  })
  return after
}
