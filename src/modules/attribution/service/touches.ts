import { insertRows } from '../../../kernel/db/bulk-insert'
import type { Db, Tx } from '../../../kernel/db/client'
import { type Committer, GroupCommit, PerRequestCommit } from '../../../kernel/db/group-commit'
import type { AttributionCtx } from '../context'
import { isBot } from '../domain/bots'
import { hasValues, type Params } from '../domain/params'

export interface NewTouch {
  brandId: number
  visitorId: string | null
  installationId: string | null
  source: 'page' | 'click' | 'install' | 'registration'
  affiliateId: number | null
  linkId: number | null
  params: Params
  bot: boolean
  ipHash: string
  userAgent: string
  landingPath: string
  referrer: string
  createdAt: number
}

const COLUMNS = [
  'brand_id',
  'visitor_id',
  'installation_id',
  'source',
  'affiliate_id',
  'link_id',
  'params',
  'direct',
  'bot',
  'ip_hash',
  'user_agent',
  'landing_path',
  'referrer',
  'created_at',
] as const

const row = (t: NewTouch) => [
  t.brandId,
  t.visitorId,
  t.installationId,
  t.source,
  t.affiliateId,
  t.linkId,
  JSON.stringify(t.params),
  hasValues(t.params) ? 0 : 1,
  t.bot ? 1 : 0,
  t.ipHash,
  t.userAgent.slice(0, 256),
  t.landingPath.slice(0, 512),
  t.referrer.slice(0, 512),
  t.createdAt,
]

/** Inserts touches in one statement per chunk; the ids in order. */
export const insertTouches = (tx: Tx, list: NewTouch[]) => insertRows(tx, 'attribution_touches', COLUMNS, list.map(row))

/**
 * Touches of concurrent landing-page hits are committed together (ADR 0001's group commit), so a burst of
 * visits costs one transaction, and each answer still waits for its touch to be durable.
 */
export function touchWriter(db: Db, groupCommit: boolean): Committer<NewTouch, number> {
  const handler = (tx: Tx, list: NewTouch[]) => insertTouches(tx, list)
  return groupCommit ? new GroupCommit(db, handler, { lingerMs: 2 }) : new PerRequestCommit(db, handler)
}

/** HMAC of the client address under a key derived from the JWT secret: comparable, never readable. */
export async function hashAddress(ctx: AttributionCtx, ip: string) {
  const key = await addressKey(ctx.config.jwt.secret)
  const mac = await crypto.subtle.sign('HMAC', key, new TextEncoder().encode(`ip:${ip}`))
  return Buffer.from(mac).toString('base64url').slice(0, 22)
}

let cachedKey: { secret: string; key: Promise<CryptoKey> } | null = null
function addressKey(secret: string) {
  if (cachedKey?.secret !== secret)
    cachedKey = {
      secret,
      key: crypto.subtle.importKey(
        'raw',
        new TextEncoder().encode(`attribution-address:${secret}`),
        { name: 'HMAC', hash: 'SHA-256' },
        false,
        ['sign'],
      ),
    }
  return cachedKey.key
}

export interface Visit {
  brandId: number
  visitorId: string
  params: Params
  ip: string
  userAgent: string | null
  landingPath: string
  referrer: string
  /** the request's host, to tell a referrer of the brand's own pages */
  host: string
}

/**
 * The affiliate behind a visit's values: a link code (its affiliate and campaign) before an affiliate
 * code. Unknown or inactive codes attribute nothing; the values are kept as given.
 */
export async function matchCodes(ctx: AttributionCtx, brandId: number, p: Params) {
  const link = p.link ? await ctx.codes.link(brandId, p.link) : null
  if (link) return link
  return p.affiliate ? await ctx.codes.affiliate(brandId, p.affiliate) : null
}

/** Records a page visit or a link click as a touch; `null` when it carries nothing worth recording. */
export async function recordVisit(
  ctx: AttributionCtx,
  v: Visit,
  source: 'page' | 'click',
  match: { affiliateId: number; linkId: number | null } | null,
) {
  if (source === 'page' && !hasValues(v.params) && !fromElsewhere(v.referrer, v.host)) return null
  return ctx.touchWriter.submit({
    brandId: v.brandId,
    visitorId: v.visitorId,
    installationId: null,
    source,
    affiliateId: match?.affiliateId ?? null,
    linkId: match?.linkId ?? null,
    params: v.params,
    bot: isBot(v.userAgent),
    ipHash: await hashAddress(ctx, v.ip),
    userAgent: v.userAgent ?? '',
    landingPath: v.landingPath,
    referrer: v.referrer,
    createdAt: ctx.clock.now(),
  })
}

/** A referrer from another host (a search engine, a partner's site); the brand's own pages are navigation. */
function fromElsewhere(referrer: string, host: string) {
  if (referrer === '') return false
  try {
    return new URL(referrer).hostname.toLowerCase() !== host
  } catch {
    return false
  }
}
