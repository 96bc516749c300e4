import type { UseCase } from '../../../kernel/use-case'
import { fromMinor } from '../../accounts'
import type { CashierCtx } from '../context'
import { refuse } from '../errors'
import {
  available,
  customerOf,
  depositedTowardLimit,
  depositLimitMinor,
  methodView,
  realAccount,
  type SessionScope,
} from './shared'

/** GET /cashier/methods: deposit_allowed first (a hard gate), then eligibility per purpose. */
export async function listMethods({
  ctx,
  brand,
  session,
  input: { login },
}: UseCase<CashierCtx, { login: number }, SessionScope>) {
  const customer = await customerOf(ctx, session)
  if (customer.depositAllowed !== 1)
    throw refuse('DEPOSIT_NOT_ALLOWED', 'deposits are closed for this customer')
  const view = await realAccount(ctx, brand, session, login)
  const currency = view.group.currency
  const dep = await available(ctx, brand, customer, view, 'deposit')
  const wd = customer.withdrawalAllowed === 1 ? await available(ctx, brand, customer, view, 'withdrawal') : []
  const codes = [...new Set([...dep, ...wd].map((m) => m.code))]
  const gates = await ctx.kyc.gates(brand.id, customer.id)
  const limit = gates.deposit_limit ? depositLimitMinor(gates.deposit_limit, currency) : null
  const used =
    limit === null ? 0 : await depositedTowardLimit(ctx.db, brand.id, customer.id, currency, ctx.clock.now())
  return {
    login,
    currency,
    kyc_status: gates.status,
    // in minor units, then back: 2000 - 1408.34 is 591.6600000000001 in floating point
    deposit_limit_remaining: limit === null ? null : fromMinor(Math.max(0, limit - used), currency),
    withdrawal_allowed: customer.withdrawalAllowed === 1 && gates.withdrawal_allowed,
    methods: codes.map((c) => {
      const m = [...dep, ...wd].find((x) => x.code === c)!
      const purposes = [
        dep.some((x) => x.code === c) ? 'deposit' : '',
        wd.some((x) => x.code === c) ? 'withdrawal' : '',
      ]
      return methodView(m, currency, purposes.filter(Boolean))
    }),
  }
}
