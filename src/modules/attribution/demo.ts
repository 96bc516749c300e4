import { and, eq, like } from 'drizzle-orm'
import { brands } from '../../kernel/brand/schema'
import { DEMO_AFFILIATES } from '../affiliate'
import type { AttributionCtx } from './context'
import { touches } from './schema'
import { insertTouches } from './service/touches'

const DAY = 86_400_000

/**
 * Clicks on the demo affiliates' links over the last 30 days, so the cabinet's funnel starts with clicks
 * on first start. Written once per brand (visitor ids `demo-…`), in one write transaction: two instances
 * booting at once see each other's rows.
 */
export async function seedAttributionDemo(ctx: AttributionCtx) {
  const now = ctx.clock.now()
  for (const d of DEMO_AFFILIATES) {
    const [brand] = await ctx.db.select().from(brands).where(eq(brands.name, d.brand))
    if (!brand) continue
    const links = (
      await Promise.all(
        [`${d.prefix}-spring`, `${d.prefix}-home`].map((code) => ctx.codes.link(brand.id, code)),
      )
    ).filter((l) => l !== null)
    if (links.length === 0) continue
    await ctx.db.transaction(async (tx) => {
      const [seen] = await tx
        .select({ id: touches.id })
        .from(touches)
        .where(and(eq(touches.brandId, brand.id), like(touches.visitorId, 'demo-%')))
        .limit(1)
      if (seen) return
      const rows = Array.from({ length: 48 }, (_, i) => {
        const link = links[i % links.length]
        return {
          brandId: brand.id,
          visitorId: `demo-${d.prefix}-${i}`,
          installationId: null,
          source: 'click' as const,
          affiliateId: link.affiliateId,
          linkId: link.linkId,
          params: {
            link: i % links.length === 0 ? `${d.prefix}-spring` : `${d.prefix}-home`,
            utm_source: 'partner',
            // the demo's referred customers came with sub1=spring (affiliate/demo.ts)
            ...(i % 3 === 0 ? { sub1: 'spring' } : {}),
          },
          bot: false,
          ipHash: '',
          userAgent: 'demo',
          landingPath: link.landingPath,
          referrer: '',
          country: ['DE', 'GB', 'FR', ''][i % 4],
          createdAt: now - ((i * 37) % 30) * DAY - (i % 24) * 3_600_000,
        }
      })
      await insertTouches(tx, rows)
    })
  }
}
