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

export function requestHost(ctx: AppContext, headers: Record<string, string | undefined>) {
  const forwarded = ctx.config.trustProxy ? headers['x-forwarded-host']?.split(',')[0] : undefined
  return normalizeHost(forwarded ?? headers.host)
}

async function resolveBrand(ctx: AppContext, headers: Record<string, string | undefined>): Promise<Brand> {
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
      async resolve({ headers }) {
        return { brand: await resolveBrand(ctx, headers) }
      },
    },
    auth: (rule: AuthRule) => ({
      async resolve({ headers, cookie }) {
        const brand = await resolveBrand(ctx, headers)
        const token = extractToken(headers.authorization, cookie[ctx.config.jwt.cookieName]?.value)
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
