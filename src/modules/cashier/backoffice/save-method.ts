import type { UseCase } from '../../../kernel/use-case'
import type { CashierCtx } from '../context'
import { refuse } from '../errors'
import { cashierMethods } from '../schema'

export async function saveMethod({
  ctx,
  brandId,
  code,
  input: m,
}: UseCase<
  CashierCtx,
  {
    provider: string
    title: string
    deposit: boolean
    withdrawal: boolean
    currencies: string[]
    countries?: string[]
    min_amount: number
    max_amount: number
    fee_percent?: number
    fee_fixed_minor?: number
    enabled: boolean
  },
  { brandId: number; code: string }
>) {
  if (!ctx.providers.has(m.provider))
    throw refuse('INVALID_DATA', `provider: one of ${[...ctx.providers.keys()].join(', ')}`)
  if (m.min_amount > m.max_amount) throw refuse('INVALID_DATA', 'min_amount: above max_amount')
  // stored in basis points: a finer percent would be rounded silently, and the fee differ from the one set
  const feeBps = Math.round((m.fee_percent ?? 0) * 100)
  if (Math.abs((m.fee_percent ?? 0) * 100 - feeBps) > 1e-6)
    throw refuse('INVALID_DATA', 'fee_percent: at most 2 decimals (a basis point, 0.01 %)')
  const values = {
    provider: m.provider,
    title: m.title,
    deposit: m.deposit ? 1 : 0,
    withdrawal: m.withdrawal ? 1 : 0,
    currencies: JSON.stringify(m.currencies),
    countries: JSON.stringify(m.countries ?? []),
    minAmount: m.min_amount,
    maxAmount: m.max_amount,
    feeBps,
    feeFixedMinor: m.fee_fixed_minor ?? 0,
    enabled: m.enabled ? 1 : 0,
    updatedAt: ctx.clock.now(),
  }
  await ctx.db
    .insert(cashierMethods)
    .values({ brandId, code, ...values })
    .onConflictDoUpdate({ target: [cashierMethods.brandId, cashierMethods.code], set: values })
  // what is stored, as the methods list answers it
  return { code, ...m, fee_percent: feeBps / 100, fee_fixed_minor: values.feeFixedMinor }
}
