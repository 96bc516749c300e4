import { isUniqueViolation } from '../../../kernel/db/errors'
import type { UseCase } from '../../../kernel/use-case'
import { ownFreeMargin, roundToCurrency } from '../../accounts'
import type { CashierCtx } from '../context'
import { refuse } from '../errors'
import { WithdrawalRequested } from '../events'
import { holdOf, money, move, viewOf } from '../transactions'
import {
  amountIn,
  byKey,
  customerOf,
  insertCreated,
  methodFor,
  realAccount,
  requestOf,
  type SessionScope,
} from './shared'

/**
 * POST /cashier/withdrawal: withdrawal_allowed, KYC, a REAL account, an eligible method and its limits,
 * free margin less credit (equity minus margin and the broker's credit) covering the amount; then the request and the hold (a balance-out
 * that refuses to go below zero) in one transaction, waiting for staff.
 */
export async function requestWithdrawal({
  ctx,
  brand,
  session,
  input,
}: UseCase<
  CashierCtx,
  { login: number; method: string; amount: number; idempotency_key?: string },
  SessionScope
>) {
  const customer = await customerOf(ctx, session)
  if (customer.withdrawalAllowed !== 1)
    throw refuse('WITHDRAWAL_NOT_ALLOWED', 'withdrawals are closed for this customer')
  const request = requestOf('withdrawal', input)
  const prior = await byKey(ctx, brand.id, customer.id, input.idempotency_key, request)
  if (prior) return { transaction: prior, idempotent: true }
  const gates = await ctx.kyc.gates(brand.id, customer.id)
  if (!gates.withdrawal_allowed)
    throw refuse(
      'KYC_REQUIRED',
      `withdrawals need these KYC steps approved: ${gates.withdrawal_requires.join(', ')}`,
    )
  const view = await realAccount(ctx, brand, session, input.login)
  const currency = view.group.currency
  const m = await methodFor(ctx, brand, customer, view, 'withdrawal', input.method)
  const amount = amountIn(m, input.amount, currency, 'withdrawal')
  const margin = await ctx.accounts.requireMargin(view)
  // the broker's credit is not paid out (the hold's own check says the same where the money moves)
  const own = ownFreeMargin(margin)
  if (own < input.amount)
    throw refuse(
      'NOT_ENOUGH_FREE_MARGIN',
      `amount: free margin less credit is ${roundToCurrency(own, currency)} ${currency} (equity ${margin.equity} less margin ${margin.margin} and credit ${margin.credit})`,
    )
  const now = ctx.clock.now()
  let row: Awaited<ReturnType<typeof move>>
  try {
    row = await ctx.uow.run(async (tx, work) => {
      const r = await insertCreated(
        tx,
        { brandId: brand.id, customerId: customer.id, kind: 'withdrawal', m, amount, currency, now },
        input,
      )
      // the hold may not take the free margin below zero where it is taken, so withdrawals (or opens)
      // asked at once cannot each spend the same free margin
      await ctx.accounts.postOperationTx(tx, work, {
        brandId: brand.id,
        login: input.login,
        op: 'OP_BALANCE_OUT',
        amountMinor: amount,
        reason: 'TR_REASON_WITHDRAWAL',
        comment: `withdrawal #${r.id} ${m.code} (held)`,
        apiData: { transaction_id: r.id },
        idempotencyKey: `cashier-hold:${r.id}`,
        hold: holdOf(r),
        createdBy: `customer:${customer.id}`,
        keepFreeMargin: true,
      })
      const moved = await move(tx, r, 'route', 'system', now, {}, 'funds held; waiting for approval')
      work.emit(WithdrawalRequested, brand.id, money(r))
      return moved!
    })
  } catch (e) {
    // the same key asked at once: the request that wrote it first is the answer
    const again = isUniqueViolation(e)
      ? await byKey(ctx, brand.id, customer.id, input.idempotency_key, request)
      : null
    if (again) return { transaction: again, idempotent: true }
    throw e
  }
  return { transaction: await viewOf(ctx, brand.id, row!.id), idempotent: false }
}
