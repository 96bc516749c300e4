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
  // the value once read, never the promise of it: a promise cannot be shared between a Worker's requests
  let first: number | null | undefined
  const firstBrand = async () => {
    if (first === undefined) {
      const [r] = await ctx.db.select({ id: min(brands.id) }).from(brands)
      first = r?.id ?? null
    }
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

/**
 * At start: OPERATOR_BRANDS names that are no brand of the deployment are logged as an error (a typo
 * would leave symbols and prices unchangeable by anyone). Not a refusal to start: a first boot may come
 * before the brands are written.
 */
export async function checkOperatorBrands(ctx: MarketCtx) {
  const names = ctx.settings.operatorBrands
  if (!names) return
  const known = new Set((await ctx.db.select({ name: brands.name }).from(brands)).map((b) => b.name))
  if (known.size === 0) return
  const unknown = names.filter((n) => !known.has(n))
  if (unknown.length)
    ctx.logger.log('error', 'OPERATOR_BRANDS names no brand of this deployment', {
      unknown,
      brands: [...known].sort(),
      operators: names.filter((n) => known.has(n)),
    })
}
