import { brands } from '../../kernel/brand/schema'
import { backfillCandles } from './backfill'
import type { MarketCtx } from './context'
import { DEMO_OVERRIDES, demoSecurities, demoSymbols } from './demo-symbols'
import { groupSecurities, groupSymbols, symbols } from './schema'

/** The demo groups whose security settings and overrides this module seeds (the accounts module seeds the groups). */
const DEMO_GROUPS = [
  ['Demo', 'demo\\USD'],
  ['Demo', 'real\\USD'],
  ['Demo', 'real\\EUR'],
  ['Demo', 'prop\\eval\\USD'],
  ['Demo', 'prop\\funded\\USD'],
  ['Beta', 'beta\\real\\USD'],
] as const

/**
 * Seeds the demo symbols, the security settings and symbol overrides of the demo groups, and (SEED_HISTORY)
 * simulated candle history, each only when absent, so two instances booting at once seed once.
 */
export async function seedDemoMarket(ctx: MarketCtx) {
  const now = ctx.clock.now()
  const universe = demoSymbols(now, { weekendTrading: ctx.settings.demoWeekendTrading })
  const brandIds = new Map((await ctx.db.select().from(brands)).map((b) => [b.name, b.id]))
  await ctx.db.transaction(async (tx) => {
    for (let i = 0; i < universe.length; i += 50)
      await tx
        .insert(symbols)
        .values(universe.slice(i, i + 50))
        .onConflictDoNothing()
    for (const [brand, name] of DEMO_GROUPS) {
      const group = await ctx.accounts.findGroup(brandIds.get(brand)!, name)
      if (!group) continue
      for (const sec of demoSecurities(name))
        await tx
          .insert(groupSecurities)
          .values({ groupId: group.id, ...sec })
          .onConflictDoNothing()
      for (const o of DEMO_OVERRIDES[name] ?? [])
        await tx
          .insert(groupSymbols)
          .values({ groupId: group.id, ...o })
          .onConflictDoNothing()
    }
  })
  await ctx.refdata.changed()
  if (ctx.settings.seedHistory) await backfillCandles(ctx.db, universe, now, ctx.settings.seed)
}
