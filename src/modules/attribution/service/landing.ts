import type { Brand } from '../../../kernel/brand/registry'
import type { AttributionCtx } from '../context'
import { parseParams } from '../domain/params'
import { visitorIdV7 } from '../domain/visitor-id'
import { hashAddress, matchCodes, recordVisit, type Visit } from './touches'

export const VISITOR_COOKIE = 'tcs_vid'
const VISITOR_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
const CLICK_DEDUPE_MS = 3_600_000

/** The visitor id of the request's first-party cookie, when it is one of ours. */
export function visitorOf(cookieHeader: string | null): string | null {
  const m = cookieHeader ? /(?:^|;\s*)tcs_vid=([^;]+)/.exec(cookieHeader) : null
  return m && VISITOR_ID.test(m[1]) ? m[1] : null
}

/** The visitor cookie: first-party, HttpOnly, SameSite=Lax, Secure in production, for a year. */
export const visitorCookie = (id: string, secure: boolean) =>
  `${VISITOR_COOKIE}=${id}; Path=/; Max-Age=${365 * 86_400}; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`

export interface Hit {
  brand: Brand
  host: string
  path: string
  query: Record<string, string | undefined>
  cookies: string | null
  referrer: string
  userAgent: string | null
  ip: string
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
})

/** A brand page opened: its attribution values become a touch of the visitor (cookie set when new). */
export async function pageVisit(ctx: AttributionCtx, h: Hit) {
  const known = visitorOf(h.cookies)
  const visitorId = known ?? visitorIdV7(ctx.clock.now())
  const visit = visitOf(h, visitorId)
  await recordVisit(ctx, visit, 'page', await matchCodes(ctx, h.brand.id, visit.params))
  return { setCookie: known ? null : visitorCookie(visitorId, ctx.config.production) }
}

/**
 * GET /go/{code}: the click of a tracking link is recorded (once per visitor, link and hour: address
 * hash and user agent, as dub counts) and answered with a redirect to the link's landing path on the
 * same host, or to `/` for an unknown or inactive code, which is recorded unattributed.
 */
export async function linkClick(ctx: AttributionCtx, h: Hit, code: string) {
  const known = visitorOf(h.cookies)
  const visitorId = known ?? visitorIdV7(ctx.clock.now())
  const visit = visitOf(h, visitorId)
  visit.params = { ...visit.params, link: code.slice(0, 128) }
  const link = await ctx.codes.link(h.brand.id, visit.params.link!)
  if (link?.campaign && !visit.params.campaign) visit.params.campaign = link.campaign
  const who = `${hashAddress(ctx, h.ip)}:${hashAddress(ctx, h.userAgent ?? '')}`
  if (await firstClick(ctx, `click:v1:${h.brand.id}:${visit.params.link}:${who}`))
    await recordVisit(ctx, visit, 'click', link)
  return {
    location: link?.landingPath ?? '/',
    setCookie: known ? null : visitorCookie(visitorId, ctx.config.production),
  }
}

async function firstClick(ctx: AttributionCtx, key: string) {
  try {
    return await ctx.store.setNX(key, '1', CLICK_DEDUPE_MS)
  } catch {
    // the shared cache away: a repeated click may count twice rather than a click being lost
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

export interface Page {
  body: string
  type: string
}

const PAGE_TTL_MS = 60_000
const pages = new Map<string, { page: Page | null; until: number }>()

/**
 * The brand's page (site/<brand>/<page>.html), else the default site's, else null (404). Held in memory
 * for a minute: every landing hit serves one, and reading the file each time cost a third of the route.
 */
export async function loadPage(ctx: AttributionCtx, brand: Brand, name: string): Promise<Page | null> {
  const key = `${brand.id}:${name}`
  const hit = pages.get(key)
  if (hit && hit.until > Date.now()) return hit.page
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
  pages.set(key, { page, until: Date.now() + PAGE_TTL_MS })
  return page
}
