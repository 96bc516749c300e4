import { isUniqueViolation } from '../../../kernel/db/errors'
import type { UseCase } from '../../../kernel/use-case'
import { fromMinor } from '../../accounts'
import type { CashierCtx } from '../context'
import { refuse } from '../errors'
import type { NextStep } from '../providers/port'
import type { cashierTransactions } from '../schema'
import { move, viewOf } from '../transactions'
import {
  amountIn,
  byKey,
  customerOf,
  depositedTowardLimit,
  depositLimitMinor,
  insertCreated,
  methodFor,
  realAccount,
  requestOf,
  type SessionScope,
} from './shared'

/**
 * POST /cashier/deposit: the gates (deposit_allowed, a REAL account of the customer, an eligible
 * method, its limits, the KYC limit), then the local transaction (created), then the provider
 * (pending_payment) and what the client does next.
 */
export async function startDeposit({
  ctx,
  brand,
  session,
  input,
  origin,
}: UseCase<
  CashierCtx,
  { login: number; method: string; amount: number; return_url?: string; idempotency_key?: string },
  SessionScope & { origin: string }
>) {
  const customer = await customerOf(ctx, session)
  if (customer.depositAllowed !== 1)
    throw refuse('DEPOSIT_NOT_ALLOWED', 'deposits are closed for this customer')
  const request = requestOf('deposit', input)
  const prior = await byKey(ctx, brand.id, customer.id, input.idempotency_key, request)
  if (prior) return { transaction: prior, next: null, idempotent: true }
  const view = await realAccount(ctx, brand, session, input.login)
  const currency = view.group.currency
  const m = await methodFor(ctx, brand, customer, view, 'deposit', input.method)
  const amount = amountIn(m, input.amount, currency)
  const gates = await ctx.kyc.gates(brand.id, customer.id)
  const now = ctx.clock.now()
  let row: typeof cashierTransactions.$inferSelect
  try {
    row = await ctx.db.transaction(async (tx) => {
      if (gates.deposit_limit) {
        const limit = depositLimitMinor(gates.deposit_limit, currency)
        // in the transaction that writes this one: the write lock orders deposits asked at once
        const used = await depositedTowardLimit(tx, brand.id, customer.id, currency, now)
        if (used + amount > limit)
          throw refuse(
            'KYC_LIMIT_EXCEEDED',
            `deposits before verification are limited to ${fromMinor(limit, currency)} ${currency}; ` +
              `${fromMinor(Math.max(0, limit - used), currency)} remain. Complete: ${gates.deposit_unlimited_requires.join(', ')}`,
          )
      }
      return insertCreated(
        tx,
        { brandId: brand.id, customerId: customer.id, kind: 'deposit', m, amount, currency, now },
        input,
      )
    })
  } catch (e) {
    const again = isUniqueViolation(e)
      ? await byKey(ctx, brand.id, customer.id, input.idempotency_key, request)
      : null
    if (again) return { transaction: again, next: null, idempotent: true }
    throw e
  }
  const provider = ctx.providers.get(m.provider)!
  let started: { next: NextStep; providerRef: string | null }
  try {
    started = await provider.startDeposit(
      {
        transactionId: row.id,
        brandId: brand.id,
        amount,
        currency,
        notifyUrl: `${origin}/cashier/webhook/${m.provider}`,
        returnUrl: input.return_url ?? `${origin}/cashier/sandbox/done`,
      },
      '',
    )
  } catch (e) {
    await ctx.db.transaction((tx) =>
      move(tx, row, 'failed', 'system', ctx.clock.now(), { reason: 'the payment provider is unavailable' }),
    )
    ctx.logger.log('error', 'cashier provider start failed', { provider: m.provider, err: String(e) })
    throw refuse('PROVIDER_UNAVAILABLE', 'the payment provider is unavailable; try again later')
  }
  await ctx.db.transaction((tx) =>
    move(tx, row, 'route', `provider:${m.provider}`, ctx.clock.now(), { providerRef: started.providerRef }),
  )
  return { transaction: await viewOf(ctx, brand.id, row.id), next: started.next, idempotent: false }
}
