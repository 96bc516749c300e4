import { and, desc, eq, lt } from 'drizzle-orm'
import { isUniqueViolation } from '../../../kernel/db/errors'
import type { AffiliateCtx } from '../context'
import { landingPathOrNull } from '../domain/hosts'
import { refuse } from '../errors'
import { trackingLinks } from '../schema'
import { affiliateOfBrand } from './affiliates'
import type { AffiliateDirectory } from './directory'

type LinkRow = typeof trackingLinks.$inferSelect

const linkView = (l: LinkRow) => ({
  id: l.id,
  affiliate_id: l.affiliateId,
  code: l.code,
  landing_path: l.landingPath,
  campaign: l.campaign,
  active: l.active === 1,
  url_path: `/go/${l.code}`,
  created_time: Math.floor(l.createdAt / 1000),
})

const landing = (raw: string) => {
  const p = landingPathOrNull(raw)
  if (!p) throw refuse('INVALID_DATA', 'landing_path: a path on the brand, starting with one /')
  return p
}

export async function listLinks(
  ctx: AffiliateCtx,
  brandId: number,
  q: { affiliate_id?: number; before?: number; limit?: number },
) {
  const limit = q.limit ?? 100
  const rows = await ctx.db
    .select()
    .from(trackingLinks)
    .where(
      and(
        eq(trackingLinks.brandId, brandId),
        q.affiliate_id ? eq(trackingLinks.affiliateId, q.affiliate_id) : undefined,
        q.before ? lt(trackingLinks.id, q.before) : undefined,
      ),
    )
    .orderBy(desc(trackingLinks.id))
    .limit(limit)
  return { rows: rows.map(linkView), next_before: rows.length === limit ? rows[rows.length - 1].id : 0 }
}

export async function createLink(
  ctx: AffiliateCtx,
  dir: AffiliateDirectory,
  brandId: number,
  input: { affiliate_id: number; code: string; landing_path?: string; campaign?: string },
) {
  const { a, access } = await affiliateOfBrand(ctx, brandId, input.affiliate_id)
  if (a.status !== 'active' || access.status !== 'active')
    throw refuse(
      'AFFILIATE_NOT_ACTIVE',
      `affiliate_id: ${a.status !== 'active' ? 'the affiliate is suspended' : 'its access to this brand is revoked'}`,
    )
  try {
    const [row] = await ctx.db
      .insert(trackingLinks)
      .values({
        brandId,
        affiliateId: input.affiliate_id,
        code: input.code,
        landingPath: landing(input.landing_path ?? '/'),
        campaign: input.campaign ?? '',
        createdAt: ctx.clock.now(),
      })
      .returning()
    await dir.forget(brandId, { link: row.code })
    return linkView(row)
  } catch (e) {
    if (isUniqueViolation(e)) throw refuse('LINK_EXISTS', 'code: a link of the brand has it')
    throw e
  }
}

export async function updateLink(
  ctx: AffiliateCtx,
  dir: AffiliateDirectory,
  brandId: number,
  id: number,
  input: { landing_path?: string; campaign?: string; active?: boolean },
) {
  const set: Partial<LinkRow> = {}
  if (input.landing_path !== undefined) set.landingPath = landing(input.landing_path)
  if (input.campaign !== undefined) set.campaign = input.campaign
  if (input.active !== undefined) set.active = input.active ? 1 : 0
  const where = and(eq(trackingLinks.id, id), eq(trackingLinks.brandId, brandId))
  const [row] = Object.keys(set).length
    ? await ctx.db.update(trackingLinks).set(set).where(where).returning()
    : await ctx.db.select().from(trackingLinks).where(where)
  if (!row) throw refuse('LINK_NOT_FOUND', 'link not found')
  await dir.forget(brandId, { link: row.code })
  return linkView(row)
}
