import { and, eq } from 'drizzle-orm'
import { isUniqueViolation } from '../../../kernel/db/errors'
import type { UseCase } from '../../../kernel/use-case'
import { fromMinor } from '../../accounts'
import type { CashierCtx } from '../context'
import { STATUS } from '../domain/status'
import { refuse } from '../errors'
import type { NextStep } from '../providers/port'
import { cashierTransactions } from '../schema'
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
 * The next step of a deposit asked again with its idempotency key (its first answer lost): while it waits
 * for its payment (pending_payment), the provider's page or the wire's instructions again, rebuilt from the
 * stored transaction (`resumeDeposit`); null once it moved on (paid, cancelled, failed), before it reached
 * the provider (a request with the key still under way), or when the provider cannot give it again.
 */
async function nextAgain(
  ctx: CashierCtx,
  brandId: number,
  customerId: number,
  id: number,
  origin: string,
): Promise<NextStep | null> {
  const [row] = await ctx.db
    .select()
    .from(cashierTransactions)
    .where(
      and(
        eq(cashierTransactions.id, id),
        eq(cashierTransactions.brandId, brandId),
        eq(cashierTransactions.customerId, customerId),
      ),
    )
  if (row?.kind !== 'deposit' || row.status !== STATUS.pending_payment || !row.providerRef) return null
  const provider = ctx.providers.get(row.provider)
  if (!provider?.resumeDeposit) return null
  return provider
    .resumeDeposit({
      transactionId: row.id,
      amount: row.amount,
      currency: row.currency,
      notifyUrl: `${origin}/cashier/webhook/${row.provider}`,
      providerRef: row.providerRef,
    })
    .catch((e: unknown) => {
      ctx.logger.log('error', 'cashier provider could not give the next step again', {
        provider: row.provider,
        err: String(e),
      })
      return null
    })
}

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
  if (prior)
    return {
      transaction: prior,
      next: await nextAgain(ctx, brand.id, customer.id, prior.id, origin),
      idempotent: true,
    }
  const view = await realAccount(ctx, brand, session, input.login)
  const currency = view.group.currency
  const m = await methodFor(ctx, brand, customer, view, 'deposit', input.method)
  const amount = amountIn(m, input.amount, currency, 'deposit')
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
    if (again)
      return {
        transaction: again,
        next: await nextAgain(ctx, brand.id, customer.id, again.id, origin),
        idempotent: true,
      }
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
