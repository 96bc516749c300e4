import { min } from 'drizzle-orm'
import type { Brand } from '../../kernel/brand/registry'
import { brands } from '../../kernel/brand/schema'
import type { MarketCtx } from './context'
import { refuse } from './errors'

/**
 * Symbols and prices are shared by every brand of a deployment: only staff of its operator brands
 * (OPERATOR_BRANDS, or the first brand) change them. A dealer of one brand must not move the prices,
 * fills and stop-outs of another's customers. Returns the check for a staff session's brand.
 */
export function operatorGuard(ctx: MarketCtx) {
  let first: Promise<number | null> | null = null
  const firstBrand = () => {
    first ??= ctx.db
      .select({ id: min(brands.id) })
      .from(brands)
      .then(([r]) => r?.id ?? null)
      .catch((e) => {
        first = null
        throw e
      })
    return first
  }
  return async (brand: Brand) => {
    const names = ctx.settings.operatorBrands
    const ok = names ? names.includes(brand.name) : brand.id === (await firstBrand())
    if (!ok)
      throw refuse(
        'NOT_OPERATOR_BRAND',
        `symbols and prices are shared by every brand of this deployment: only staff of ${names ? names.join(', ') : 'its first brand'} change them (OPERATOR_BRANDS)`,
      )
  }
}
