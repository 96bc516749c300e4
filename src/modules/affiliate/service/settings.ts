import { and, eq } from 'drizzle-orm'
import { brandHosts } from '../../../kernel/brand/schema'
import type { Db, Tx } from '../../../kernel/db/client'
import { isUniqueViolation } from '../../../kernel/db/errors'
import type { AffiliateCtx } from '../context'
import {
  hostnameOrNull,
  postbackEntryHost,
  postbackHostAllowed,
  postbackHostEntryOrNull,
} from '../domain/hosts'
import { refuse } from '../errors'
import { affiliateSettings } from '../schema'
import { PARTNER_SITE } from '../site'
import { internalTarget } from './egress'
import { wakeParkedPostbacks } from './postback-queue'

/** The brand's postback allowlist (`db`: a transaction reading it with what it writes). */
export async function postbackHostsOf(
  ctx: AffiliateCtx,
  brandId: number,
  db: Db | Tx = ctx.db,
): Promise<string[]> {
  const [s] = await db
    .select({ hosts: affiliateSettings.postbackHosts })
    .from(affiliateSettings)
    .where(eq(affiliateSettings.brandId, brandId))
  return s ? (JSON.parse(s.hosts) as string[]) : []
}

export async function checkPostbackUrl(ctx: AffiliateCtx, brandId: number, url: string) {
  if (!postbackHostAllowed(url, await postbackHostsOf(ctx, brandId)))
    throw refuse(
      'POSTBACK_HOST_NOT_ALLOWED',
      "postback_url: an http(s) URL on the brand's postback_hosts is required (port 80 or 443, or one an entry names)",
    )
  const why = await internalTarget(ctx, new URL(url).hostname, 'allowed')
  if (why) throw refuse('POSTBACK_HOST_NOT_ALLOWED', `postback_url: ${why}`)
}

/** The brand's hosts of the partner site (one: its affiliate_host). */
const partnerHostsOf = (brandId: number) =>
  and(eq(brandHosts.brandId, brandId), eq(brandHosts.site, PARTNER_SITE.name))

export async function readSettings(ctx: AffiliateCtx, brandId: number) {
  const [b] = await ctx.db.select({ host: brandHosts.host }).from(brandHosts).where(partnerHostsOf(brandId))
  const [s] = await ctx.db.select().from(affiliateSettings).where(eq(affiliateSettings.brandId, brandId))
  return {
    affiliate_host: b?.host ?? '',
    postback_hosts: s ? (JSON.parse(s.postbackHosts) as string[]) : [],
    active_trader_lots: (s?.activeTraderLots ?? 0) / 100,
  }
}

/**
 * The brand's affiliate settings. `affiliate_host` is a bare hostname (spec 4.17) that no brand serves its
 * API on and no other brand uses for its cabinet.
 */
export async function updateSettings(
  ctx: AffiliateCtx,
  brandId: number,
  input: { affiliate_host?: string; postback_hosts?: string[]; active_trader_lots?: number },
) {
  let host: string | undefined
  if (input.affiliate_host !== undefined) {
    host = hostnameOrNull(input.affiliate_host) ?? undefined
    if (!host) throw refuse('INVALID_DATA', 'affiliate_host: a hostname without scheme, port or path')
    if (await ctx.brands.byHost(host))
      throw refuse('HOST_TAKEN', 'affiliate_host: the API of a brand is served on this host')
  }
  const lots = input.active_trader_lots
  if (lots !== undefined && Math.abs(lots * 100 - Math.round(lots * 100)) > 1e-6)
    throw refuse('INVALID_DATA', 'active_trader_lots: steps of 0.01 lot')
  const hosts = input.postback_hosts?.map((h) => {
    const ok = postbackHostEntryOrNull(h)
    if (!ok) throw refuse('INVALID_DATA', `postback_hosts: ${h} is not a hostname (or hostname:port)`)
    return ok
  })
  for (const h of hosts ?? []) {
    const why = await internalTarget(ctx, postbackEntryHost(h), 'allowed')
    if (why) throw refuse('POSTBACK_HOST_NOT_ALLOWED', `postback_hosts: ${why}`)
  }
  try {
    await ctx.db.transaction(async (tx) => {
      if (host) {
        await tx.delete(brandHosts).where(partnerHostsOf(brandId))
        await tx.insert(brandHosts).values({ host, brandId, site: PARTNER_SITE.name })
      }
      const set = {
        ...(hosts ? { postbackHosts: JSON.stringify(hosts) } : {}),
        ...(input.active_trader_lots !== undefined
          ? { activeTraderLots: Math.round(input.active_trader_lots * 100) }
          : {}),
      }
      await tx
        .insert(affiliateSettings)
        .values({ brandId, ...set })
        .onConflictDoUpdate({
          target: affiliateSettings.brandId,
          set: Object.keys(set).length ? set : { brandId },
        })
      // the brand's postbacks parked for a host off its allowlist go out at the sender's next pass
      if (hosts) await wakeParkedPostbacks(tx, { brandId }, ctx.clock.now())
    })
  } catch (e) {
    if (isUniqueViolation(e)) throw refuse('HOST_TAKEN', 'affiliate_host: another brand uses this host')
    throw e
  }
  if (host) ctx.brands.invalidate()
  return readSettings(ctx, brandId)
}
