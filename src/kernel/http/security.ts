import { timingSafeEqual } from 'node:crypto'
import { Elysia } from 'elysia'
import { type AuditRule, audited } from '../audit/recorder'
import { extractToken } from '../auth/extract'
import type { Session, SessionType } from '../auth/session'
import { type Brand, normalizeHost } from '../brand/registry'
import { BRAND_SITE } from '../brand/sites'
import { type Kernel, PrincipalsPort } from '../kernel'
import { fillDeferred, isDeferred, readBody } from './body'
import { ApiError } from './errors'
import { httpPlatform } from './http'

/** Who may call a route: the session types, and the answer for a valid token of another type. */
interface AuthRule {
  roles: readonly SessionType[]
  denied?: { status: number; code: string }
  /**
   * Open to a confined principal (PrincipalDirectory.confinement): the route that lifts the confinement,
   * e.g. the one that sets a new password for an account that must change its generated one.
   */
  whileConfined?: true
  /**
   * A route that ends sessions (sign-out): open to a confined principal too, so an account signed in with
   * a temporary password on a shared terminal can still leave.
   */
  signOut?: true
  /**
   * The staff audit trail (kernel/audit): a staff session's changes are recorded, each before it runs;
   * `'read'` records its reads too (a customer's identity document opened); `'batched'` records each once
   * answered, in groups (the dealer's quote batches, many a second).
   */
  audit?: AuditRule
}

/** The host the client asked for, as sent: X-Forwarded-Host behind a trusted proxy, else Host. */
export function publicHost(ctx: Pick<Kernel, 'config'>, headers: Headers): string | null {
  const forwarded = ctx.config.trustProxy ? headers.get('x-forwarded-host')?.split(',')[0]?.trim() : undefined
  return forwarded || headers.get('host')
}

// Guards read `request.headers` directly: naming `headers` in a hook makes Elysia copy every header of
// every request into an object.
function requestHost(ctx: Kernel, headers: Headers) {
  return normalizeHost(publicHost(ctx, headers))
}

async function resolveBrand(ctx: Kernel, headers: Headers): Promise<Brand> {
  const brand = await ctx.brands.byHost(requestHost(ctx, headers))
  if (!brand) throw new ApiError(404, 'BRAND_NOT_FOUND', 'no brand is served on this host')
  return brand
}

/**
 * A route of a brand's other site, one a module declares (ModuleDefinition.sites, kernel/brand/sites.ts):
 * it is served only on the brand's hosts of that site (its other hosts answer 404 NOT_FOUND), and the
 * module checks its own callers.
 */
interface SiteRule {
  /**
   * The declared site whose hosts serve the route. Several sites (the brand's own, `BRAND_SITE`, among
   * them, e.g. the root of every host of a brand): on a host of any of them, an unknown host answering
   * 404 BRAND_NOT_FOUND; without `verify`, the handler's `principal` says which: `{ site: name }`.
   */
  site: string | readonly string[]
  /** Verifies the caller once the brand is known; what it returns is the handler's `principal`. */
  verify?: (request: Request, brand: Brand) => Promise<unknown>
  /** The OpenAPI security requirement and the access line of the route. */
  security?: Record<string, string[]>[]
  access: string
  /** codes the verification answers, per status (documented on the route) */
  refusals?: Record<number, string[]>
}

/** The sites of a rule, each the brand's own or one a module declared (a typo fails at start-up). */
function sitesOf(ctx: Kernel, rule: SiteRule): readonly string[] {
  const sites = typeof rule.site === 'string' ? [rule.site] : rule.site
  for (const s of sites)
    if (s !== BRAND_SITE && !ctx.sites.has(s)) throw new Error(`site ${s}: no module declares it`)
  return sites
}

const unauthorized = () =>
  new ApiError(401, 'UNAUTHORIZED', 'the session token is invalid, expired or revoked')

/**
 * The session of the request's token, refused (401) unless the token is valid, of this brand, and its
 * principal (account, customer or staff member) is still enabled with the session epoch the token was
 * issued under: a disable or a password change ends every session at once.
 */
async function authenticate(ctx: Kernel, request: Request, brand: Brand, rule: AuthRule) {
  const headers = request.headers
  const authorization = headers.get('authorization')
  const token = extractToken(authorization, headers.get('cookie'), ctx.config.jwt.cookieName)
  if (!token) throw new ApiError(401, 'UNAUTHORIZED', 'a session token is required')
  if (!authorization && request.method !== 'GET' && request.method !== 'HEAD') refuseCrossSite(ctx, headers)
  const session: Session | null = await ctx.tokens.verify(token)
  if (!session || session.brandId !== brand.id) throw unauthorized()
  if (!rule.roles.includes(session.type)) {
    const d = rule.denied ?? { status: 403, code: 'FORBIDDEN' }
    throw new ApiError(d.status, d.code, `${session.type} may not call this route`)
  }
  const directory = ctx.ports.get(PrincipalsPort)
  const principal = await directory.current(session)
  if (principal === null) throw unauthorized()
  if (!rule.whileConfined && !rule.signOut) {
    const confined = directory.confinement?.(session, principal)
    if (confined) throw new ApiError(403, confined.code, confined.message)
  }
  // per request: the principal's record rides along, so the route does not read it a second time
  return { ...session, principal }
}

/**
 * CSRF: a change signed in by the session cookie alone must come from a page of this very host. SameSite=Lax
 * keeps the cookie from other sites, not from sibling hosts of one site (another brand's host, the
 * affiliate cabinet's, a marketing subdomain), and a POST without a body or with a form is sent across
 * hosts without a preflight. Browsers send Origin on every POST, same-origin fetches included; a client
 * that sends none (a script) signs its requests with Authorization, as the API documents.
 */
function refuseCrossSite(ctx: Kernel, headers: Headers) {
  const origin = headers.get('origin')
  if (origin === null)
    throw new ApiError(403, 'CSRF_REJECTED', 'a change signed in by the session cookie must carry its Origin')
  if (!sameHost(origin, publicHost(ctx, headers)))
    throw new ApiError(403, 'CSRF_REJECTED', 'the request comes from a page of another host')
}

/**
 * Whether a page's Origin is the host a request was sent to: the same name, and the same port where the
 * Host says one (another port of a host is another page to a browser's same-origin rule). Origin leaves a
 * default port out and a proxy may write it (`$host:$server_port`): the origin's port is then its scheme's
 * default. A Host without a port (a proxy's `$host` drops it) is matched by name.
 */
export function sameHost(origin: string, host: string | null): boolean {
  let o: URL
  try {
    o = new URL(origin)
  } catch {
    return false
  }
  if (!o.hostname || !host) return false
  const h = /^(\[[^\]]*\]|[^:]*)(?::(\d+))?$/.exec(host.trim().toLowerCase())
  if (!h || h[1] !== o.hostname.toLowerCase()) return false
  if (h[2] === undefined) return true
  return Number(h[2]) === Number(o.port || (o.protocol === 'https:' ? 443 : 80))
}

function feedTokenMatches(expected: string | undefined, given: string | null) {
  if (!expected || !given) return false
  const a = Buffer.from(expected)
  const b = Buffer.from(given)
  return a.length === b.length && timingSafeEqual(a, b)
}

/** What the guards leave on Elysia's context for `resolve` to hand to the handler. */
interface Guarded {
  request: Request
  route: string
  body: unknown
  brand?: Brand
  session?: Session
  principal?: unknown
  /** The platform's request id (kernel/http), derived before any guard runs. */
  requestId?: string
}

/**
 * The body, read after the guard has run (DESIGN rule 5: nobody learns a route's schema without the
 * right to call it): Elysia's parse phase only defers it (kernel/http), the guard reads it here, before
 * validation, with the route's declared content type and the size limit.
 */
async function takeBody(ctx: Kernel, c: Guarded) {
  // Elysia's dynamic mode (the edge) runs no parse phase for a request without a body: nothing was
  // deferred, and the route's kind still decides (a signed webhook's empty body is verified as '')
  if (c.body !== undefined ? !isDeferred(c.body) : c.request.method === 'GET') return
  const holder = isDeferred(c.body) ? c.body : undefined
  const kind = ctx.routeBodies.get(`${c.request.method} ${c.route}`) ?? 'json'
  if (kind === 'none') {
    if (holder) fillDeferred(holder, undefined)
    c.body = undefined
    return
  }
  const limit = kind === 'multipart' ? ctx.config.upload.maxBytes + 64 * 1024 : ctx.config.body.maxBytes
  const body = await readBody(c.request, kind, limit)
  c.body = holder ? fillDeferred(holder, body) : body
}

/**
 * Route guards as macros (DESIGN rule 5). `brand: true` puts the brand of the Host on the context;
 * `auth: rule` also verifies the token and puts the session, refusing tokens of another brand. Both run
 * in the transform phase, before any validation of the body, query or path, so an unauthenticated or
 * unauthorized caller gets 401/403 whatever it sent. They declare the JSON body (an upload route
 * declares multipart instead) and the security requirement in the OpenAPI document.
 */
export const security = (ctx: Kernel) =>
  new Elysia({ name: 'security', seed: ctx.instanceId }).use(httpPlatform(ctx)).macro({
    brand: {
      // Elysia's types take a parser function only; its runtime also takes a content type name
      parse: 'json' as never,
      detail: { security: [], 'x-guard': { brand: true } } as Record<string, unknown>,
      async transform(c) {
        const g = c as unknown as Guarded
        g.brand = await resolveBrand(ctx, g.request.headers)
        await takeBody(ctx, g)
      },
      resolve(c) {
        return { brand: (c as unknown as Guarded).brand as Brand }
      },
    },
    feed: {
      // Elysia's types take a parser function only; its runtime also takes a content type name
      parse: 'json' as never,
      detail: { security: [{ FeedToken: [] }], 'x-guard': { roles: [], feed: true } } as Record<
        string,
        unknown
      >,
      async transform(c) {
        const g = c as unknown as Guarded
        if (!feedTokenMatches(ctx.config.quotes.feedToken, g.request.headers.get('x-feed-token')))
          throw new ApiError(401, 'UNAUTHORIZED', 'a valid X-Feed-Token is required')
        await takeBody(ctx, g)
      },
    },
    site: (rule: SiteRule) => {
      const sites = sitesOf(ctx, rule)
      const unknown = sites.includes(BRAND_SITE)
        ? () => new ApiError(404, 'BRAND_NOT_FOUND', 'no brand is served on this host')
        : () => new ApiError(404, 'NOT_FOUND', 'not found')
      return {
        // Elysia's types take a parser function only; its runtime also takes a content type name
        parse: 'json' as never,
        detail: {
          security: rule.security ?? [],
          'x-guard': { site: rule.site, access: rule.access, refusals: rule.refusals ?? {} },
        } as Record<string, unknown>,
        async transform(c) {
          const g = c as unknown as Guarded
          const at = await ctx.brands.siteOf(requestHost(ctx, g.request.headers))
          if (!at || !sites.includes(at.site)) throw unknown()
          g.brand = at.brand
          g.principal = rule.verify ? await rule.verify(g.request, at.brand) : { site: at.site }
          await takeBody(ctx, g)
        },
        resolve(c) {
          const g = c as unknown as Guarded
          return { brand: g.brand as Brand, principal: g.principal }
        },
      }
    },
    auth: (rule: AuthRule) => ({
      // Elysia's types take a parser function only; its runtime also takes a content type name
      parse: 'json' as never,
      detail: {
        security: [{ ApiTokenAuth: [] }],
        'x-guard': {
          roles: rule.roles,
          denied: rule.denied ?? null,
          // what the document and the authorization matrix read: the route is open to a confined principal
          // (an account that must change its password: the password change itself, and signing out)
          whileConfined: !!(rule.whileConfined || rule.signOut),
        },
      } as Record<string, unknown>,
      async transform(c) {
        const g = c as unknown as Guarded
        const brand = await resolveBrand(ctx, g.request.headers)
        g.session = await authenticate(ctx, g.request, brand, rule)
        g.brand = brand
        await takeBody(ctx, g)
        // written before the route runs: a change is never made without its record (nor the record's
        // write refused without the change refused: 503, nothing done)
        if (audited(g.session, g.request.method, rule.audit))
          await ctx.audit.begin(g.request, g.route, g.session, g.body, g.requestId ?? '', rule.audit)
      },
      resolve(c) {
        const g = c as unknown as Guarded
        return { brand: g.brand as Brand, session: g.session as Session }
      },
    }),
  })
