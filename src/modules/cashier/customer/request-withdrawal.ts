import type { UseCase } from '../../../kernel/use-case'
import type { CashierCtx } from '../context'
import { refuse } from '../errors'
import { WithdrawalRequested } from '../events'
import { money, move, viewOf } from '../transactions'
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
 * free margin (equity minus margin) covering the amount; then the request and the hold (a balance-out
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
  const prior = await byKey(ctx, brand.id, customer.id, input.idempotency_key, requestOf('withdrawal', input))
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
  const amount = amountIn(m, input.amount, currency)
  const margin = await ctx.accounts.requireMargin(view)
  if (margin.margin_free < input.amount)
    throw refuse(
      'NOT_ENOUGH_FREE_MARGIN',
      `amount: free margin is ${margin.margin_free} ${currency} (equity ${margin.equity} less margin ${margin.margin})`,
    )
  const now = ctx.clock.now()
  const row = await ctx.uow.run(async (tx, work) => {
    const r = await insertCreated(
      tx,
      { brandId: brand.id, customerId: customer.id, kind: 'withdrawal', m, amount, currency, now },
      input,
    )
    await ctx.accounts.postOperationTx(tx, work, {
      brandId: brand.id,
      login: input.login,
      op: 'OP_BALANCE_OUT',
      amountMinor: amount,
      reason: 'TR_REASON_WITHDRAWAL',
      comment: `withdrawal #${r.id} ${m.code} (held)`,
      apiData: { transaction_id: r.id },
      idempotencyKey: `cashier-hold:${r.id}`,
      createdBy: `customer:${customer.id}`,
    })
    const moved = await move(tx, r, 'route', 'system', now, {}, 'funds held; waiting for approval')
    work.emit(WithdrawalRequested, brand.id, money(r))
    return moved!
  })
  return { transaction: await viewOf(ctx, row.id), idempotent: false }
}
