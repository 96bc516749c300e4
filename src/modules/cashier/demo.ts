import { eq } from 'drizzle-orm'
import { brands } from '../../kernel/brand/schema'
import type { CashierCtx } from './context'
import { cashierMethods } from './schema'

/** Card (sandbox), card via the checkout-shaped module, and bank wire, for each demo brand. */
const METHODS = [
  { code: 'card', provider: 'sandbox', title: 'Card (sandbox)', withdrawal: 1, min: 10, max: 10_000 },
  {
    code: 'card_checkout',
    provider: 'checkout',
    title: 'Card (checkout)',
    withdrawal: 0,
    min: 10,
    max: 10_000,
  },
  { code: 'wire', provider: 'wire', title: 'Bank wire', withdrawal: 1, min: 50, max: 100_000 },
]

/** Inserts the demo methods unless present (keyed by brand and code: safe when instances boot at once). */
export async function seedCashierDemo(ctx: CashierCtx) {
  const now = ctx.clock.now()
  for (const name of ['Demo', 'Beta']) {
    const [b] = await ctx.db.select({ id: brands.id }).from(brands).where(eq(brands.name, name))
    if (!b) continue
    await ctx.db
      .insert(cashierMethods)
      .values(
        METHODS.map((m) => ({
          brandId: b.id,
          code: m.code,
          provider: m.provider,
          title: m.title,
          deposit: 1,
          withdrawal: m.withdrawal,
          currencies: JSON.stringify(['USD', 'EUR', 'GBP']),
          minAmount: m.min,
          maxAmount: m.max,
          updatedAt: now,
        })),
      )
      .onConflictDoNothing()
  }
}
