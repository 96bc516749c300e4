import type { Brand } from '../../../kernel/brand/registry'
import { isSameHostPath } from '../../../kernel/same-host'
import type { CodeMatch } from '../../affiliate'
import type { AttributionCtx } from '../context'
import { cleanValue, parseParams } from '../domain/params'
import { hashAddress, matchCodes, recordVisit, type Visit } from './touches'
import { visitorIdV7 } from './visitor-id'

const VISITOR_COOKIE = 'tcs_vid'
const VISITOR_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
const CLICK_DEDUPE_MS = 3_600_000

/** The visitor id of the request's first-party cookie, when it is one of ours. */
export function visitorOf(cookieHeader: string | null): string | null {
  const m = cookieHeader ? /(?:^|;\s*)tcs_vid=([^;]+)/.exec(cookieHeader) : null
  return m && VISITOR_ID.test(m[1]) ? m[1] : null
}

/** The visitor cookie: first-party, HttpOnly, SameSite=Lax, Secure in production, for a year. */
const visitorCookie = (id: string, secure: boolean) =>
  `${VISITOR_COOKIE}=${id}; Path=/; Max-Age=${365 * 86_400}; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`

export interface Hit {
  brand: Brand
  host: string
  path: string
  /** the request's own query string: a repeated name keeps its first value (domain/params.ts) */
  query: URLSearchParams
  cookies: string | null
  referrer: string
  userAgent: string | null
  ip: string
  /** ISO 3166-1 alpha-2 from the edge ('' when unknown; domain/country.ts) */
  country: string
}

const visitOf = (h: Hit, visitorId: string): Visit => ({
  brandId: h.brand.id,
  visitorId,
  params: parseParams(h.query),
  ip: h.ip,
  userAgent: h.userAgent,
  landingPath: h.path,
  referrer: h.referrer.slice(0, 512),
  host: h.host,
  country: h.country,
})

/**
 * The dedupe key of a click, the same for a link followed and a page opened with its values: one unique
 * click per visitor, brand, affiliate and link within the hour (`/go/x` then `/?link=x` is one). A link
 * code that names nothing dedupes by the code.
 */
const clickKey = (brandId: number, match: CodeMatch | null, code: string | null) =>
  match
    ? `click:v3:${brandId}:${match.affiliateId}:${match.linkId ?? 0}`
    : `click:v3:${brandId}:none:${code ?? ''}`

/**
 * A brand page opened: its attribution values become a touch of the visitor (cookie set when new). One
 * that names an affiliate or link is a click of its funnel, checked as a link's click is: a repeat within
 * the hour is not unique, and an address hitting like a script marks it suspect.
 */
export async function pageVisit(ctx: AttributionCtx, h: Hit) {
  const known = visitorOf(h.cookies)
  const visitorId = known ?? visitorIdV7(ctx.clock.now())
  const visit = visitOf(h, visitorId)
  const match = await matchCodes(ctx, h.brand.id, visit.params)
  if (!match) await recordVisit(ctx, visit, 'page', null)
  else {
    // a landing page reloaded with the affiliate's values is a raw click, not another unique one
    const [first, suspect] = await Promise.all([
      firstClickOf(ctx, clickKey(h.brand.id, match, null), h, known, visitorId),
      suspectAddress(ctx, h.brand.id, hashAddress(ctx, h.ip), hashAddress(ctx, h.userAgent ?? '')),
    ])
    await recordVisit(ctx, visit, 'page', match, { repeat: !first, suspect })
  }
  return { setCookie: known ? null : visitorCookie(visitorId, ctx.config.production) }
}

/**
 * Whether this is the first click of its clicker under `prefix` within the hour: the visitor of the
 * cookie; a client without one (each of its requests mints a new visitor) by its address hash and user
 * agent, as dub counts, its new visitor marked too, so that its next request, cookie and all, repeats it.
 */
async function firstClickOf(
  ctx: AttributionCtx,
  prefix: string,
  h: Hit,
  known: string | null,
  visitorId: string,
) {
  if (known) return firstClick(ctx, `${prefix}:${known}`)
  const [byAddress] = await Promise.all([
    firstClick(ctx, `${prefix}:a:${hashAddress(ctx, h.ip)}:${hashAddress(ctx, h.userAgent ?? '')}`),
    firstClick(ctx, `${prefix}:${visitorId}`),
  ])
  return byAddress
}

/**
 * GET /go/{code}: the click of a tracking link is recorded (unique once per visitor, link and hour: the
 * visitor's cookie, or its address hash and user agent without one) and answered with a redirect to the link's landing path on the
 * same host, or to `/` for an unknown or inactive code, which is recorded unattributed. The code is a
 * value like the query's: one not plain text or over 128 characters is dropped (the click keeps no link).
 */
export async function linkClick(ctx: AttributionCtx, h: Hit, rawCode: string) {
  const known = visitorOf(h.cookies)
  const visitorId = known ?? visitorIdV7(ctx.clock.now())
  const visit = visitOf(h, visitorId)
  // the path names the link: a `link` of the query never stands in for it
  const code = cleanValue(rawCode)
  if (code === null) delete visit.params.link
  else visit.params.link = code
  const link = code === null ? null : await ctx.codes.link(h.brand.id, code)
  if (link?.campaign && !visit.params.campaign) visit.params.campaign = link.campaign
  // a click lands where it redirects (the reports' landing page), not on /go/{code}; a stored path a
  // browser would read as another host's (`//host`, saved before links refused it) lands on `/`
  const location = link && isSameHostPath(link.landingPath) ? link.landingPath : '/'
  visit.landingPath = location
  // every click is a touch (the latest one wins a registration); a repeat of the visitor's click on the
  // link within the hour counts as raw, not unique; a burst from one address is flagged, not dropped
  const address = hashAddress(ctx, h.ip)
  const [first, suspect] = await Promise.all([
    firstClickOf(ctx, clickKey(h.brand.id, link, code), h, known, visitorId),
    suspectAddress(ctx, h.brand.id, address, hashAddress(ctx, h.userAgent ?? '')),
  ])
  await recordVisit(ctx, visit, 'click', link, { repeat: !first, suspect })
  return {
    location,
    setCookie: known ? null : visitorCookie(visitorId, ctx.config.production),
  }
}

/** Clicks of one address in a minute past which its clicks are suspect, and agents it may rotate through. */
const ADDRESS_CLICKS_PER_MINUTE = 30
const ADDRESS_AGENTS_PER_10_MINUTES = 8

/**
 * Whether an address clicks like a script: over 30 clicks a minute, or more than 8 user agents in 10
 * minutes (rotation). Links followed and pages opened with an affiliate's values count together. Counted in the shared cache, across instances; the cache away, nothing is flagged.
 */
async function suspectAddress(ctx: AttributionCtx, brandId: number, address: string, agent: string) {
  try {
    const minute = Math.floor(ctx.clock.now() / 60_000)
    const [clicks, newAgent] = await Promise.all([
      ctx.store.incr(`clicks:v1:${brandId}:${address}:${minute}`, 120_000),
      ctx.store.setNX(`agent:v1:${brandId}:${address}:${agent}`, '1', 600_000),
    ])
    const agents = newAgent
      ? await ctx.store.incr(`agents:v1:${brandId}:${address}`, 600_000)
      : Number((await ctx.store.get(`agents:v1:${brandId}:${address}`)) ?? 0)
    return clicks > ADDRESS_CLICKS_PER_MINUTE || agents > ADDRESS_AGENTS_PER_10_MINUTES
  } catch {
    return false
  }
}

async function firstClick(ctx: AttributionCtx, key: string) {
  // the shared cache away (it answers, or throws): a repeated click may count twice rather than a
  // visitor's first click be lost
  try {
    return await ctx.store.setNX(key, '1', CLICK_DEDUPE_MS, true)
  } catch {
    return true
  }
}

/** Nothing runs on a landing page and nothing loads from elsewhere; the referrer stays on the site. */
const POLICY =
  "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; " +
  "img-src 'self'; base-uri 'none'; form-action 'self'\">" +
  '<meta name="referrer" content="strict-origin-when-cross-origin">'

/** The page with the policy first in its <head> (served once a minute from memory, not per hit). */
const withPolicy = (html: string) => {
  const at = html.search(/<head[^>]*>/i)
  if (at === -1) return POLICY + html
  const end = html.indexOf('>', at) + 1
  return html.slice(0, end) + POLICY + html.slice(end)
}

interface Page {
  body: string
  type: string
}

const PAGE_TTL_MS = 60_000
/** Per app instance: two in one process (tests, a Worker's isolate reused) may serve other sites. */
const pagesOf = new WeakMap<AttributionCtx, Map<string, { page: Page | null; until: number }>>()

/**
 * The brand's page (site/<brand>/<page>.html), else the default site's, else null (404). Held in memory
 * for a minute: every landing hit serves one, and reading the file each time cost a third of the route.
 */
export async function loadPage(ctx: AttributionCtx, brand: Brand, name: string): Promise<Page | null> {
  const key = `${brand.id}:${name}`
  let pages = pagesOf.get(ctx)
  if (!pages) {
    pages = new Map()
    pagesOf.set(ctx, pages)
  }
  const now = ctx.clock.now()
  const hit = pages.get(key)
  if (hit && hit.until > now) return hit.page
  const slug = brand.name.toLowerCase().replace(/[^a-z0-9-]/g, '-')
  const res =
    (await ctx.loadAsset(`site/${slug}/${name}.html`)) ?? (await ctx.loadAsset(`site/default/${name}.html`))
  const page = res
    ? {
        body: withPolicy(await res.text()),
        type: res.headers.get('content-type') ?? 'text/html; charset=utf-8',
      }
    : null
  if (pages.size > 1_000) pages.clear()
  pages.set(key, { page, until: now + PAGE_TTL_MS })
  return page
}
