import { Elysia } from 'elysia'
import type { AppContext } from '../context'
import { extractToken } from './auth/extract'
import type { Session, SessionType } from './auth/session'
import { type Brand, normalizeHost } from './brand/registry'
import { ApiError } from './errors'
import { httpPlatform } from './http'

/** Who may call a route: the session types, and the answer for a valid token of another type. */
export interface AuthRule {
  roles: readonly SessionType[]
  denied?: { status: number; code: string }
}

// Guards read `request.headers` directly: naming `headers` in a hook makes Elysia copy every header of
// every request into an object.
function requestHost(ctx: AppContext, headers: Headers) {
  const forwarded = ctx.config.trustProxy ? headers.get('x-forwarded-host')?.split(',')[0] : undefined
  return normalizeHost(forwarded ?? headers.get('host'))
}

async function resolveBrand(ctx: AppContext, headers: Headers): Promise<Brand> {
  const brand = await ctx.brands.byHost(requestHost(ctx, headers))
  if (!brand) throw new ApiError(404, 'BRAND_NOT_FOUND', 'no brand is served on this host')
  return brand
}

/**
 * Route guards as macros (DESIGN rule 5). `brand: true` puts the brand of the Host on the context;
 * `auth: rule` also verifies the token and puts the session, refusing tokens of another brand.
 */
export const security = (ctx: AppContext) =>
  new Elysia({ name: 'security', seed: ctx.instanceId }).use(httpPlatform(ctx)).macro({
    brand: {
      async resolve({ request }) {
        return { brand: await resolveBrand(ctx, request.headers) }
      },
    },
    auth: (rule: AuthRule) => ({
      // The cookie is read from the header, not Elysia's cookie jar, which would parse every cookie of
      // every request of every guarded route.
      async resolve({ request }) {
        const headers = request.headers
        const brand = await resolveBrand(ctx, headers)
        const token = extractToken(
          headers.get('authorization'),
          headers.get('cookie'),
          ctx.config.jwt.cookieName,
        )
        if (!token) throw new ApiError(401, 'UNAUTHORIZED', 'a session token is required')
        const session: Session | null = await ctx.tokens.verify(token)
        if (!session || session.brandId !== brand.id)
          throw new ApiError(401, 'UNAUTHORIZED', 'the session token is invalid, expired or revoked')
        if (!rule.roles.includes(session.type)) {
          const d = rule.denied ?? { status: 403, code: 'FORBIDDEN' }
          throw new ApiError(d.status, d.code, `${session.type} may not call this route`)
        }
        return { brand, session }
      },
    }),
  })
