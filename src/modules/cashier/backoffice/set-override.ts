import { and, eq } from 'drizzle-orm'
import type { UseCase } from '../../../kernel/use-case'
import type { CashierCtx } from '../context'
import { refuse } from '../errors'
import { cashierOverrides } from '../schema'

export async function setOverride({
  ctx,
  brandId,
  customerId,
  method,
  input: { enabled },
}: UseCase<
  CashierCtx,
  { enabled: boolean | null },
  { brandId: number; customerId: number; method: string }
>) {
  const customer = await ctx.accounts.read.customerIn(brandId, customerId)
  if (!customer) throw refuse('CUSTOMER_NOT_FOUND', 'customer not found')
  const where = and(
    eq(cashierOverrides.brandId, brandId),
    eq(cashierOverrides.customerId, customerId),
    eq(cashierOverrides.method, method),
  )
  if (enabled === null) await ctx.db.delete(cashierOverrides).where(where)
  else
    await ctx.db
      .insert(cashierOverrides)
      .values({ brandId, customerId, method, enabled: enabled ? 1 : 0, updatedAt: ctx.clock.now() })
      .onConflictDoUpdate({
        target: [cashierOverrides.brandId, cashierOverrides.customerId, cashierOverrides.method],
        set: { enabled: enabled ? 1 : 0, updatedAt: ctx.clock.now() },
      })
  const rows = await ctx.db
    .select({ method: cashierOverrides.method, enabled: cashierOverrides.enabled })
    .from(cashierOverrides)
    .where(and(eq(cashierOverrides.brandId, brandId), eq(cashierOverrides.customerId, customerId)))
  return {
    customer_id: customerId,
    overrides: rows.map((r) => ({ method: r.method, enabled: r.enabled === 1 })),
  }
}
