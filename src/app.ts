import { Elysia, type ElysiaConfig } from 'elysia'
import { buildContext, type Deps } from './context'
import type { BodyKind } from './kernel/body'
import { httpPlatform } from './kernel/http'
import { openapiPlugin } from './kernel/openapi'
import { accountRoutes } from './modules/accounts/routes'
import { alertRoutes } from './modules/alerts/routes'
import { authRoutes } from './modules/auth/routes'
import { healthRoutes } from './modules/health/routes'
import { managerRoutes } from './modules/manager/routes'
import { marketAdminRoutes } from './modules/market/admin-routes'
import { marketRoutes } from './modules/market/routes'
import { notificationRoutes } from './modules/notifications/routes'
import { scriptRoutes } from './modules/scripts/routes'
import { tradingRoutes } from './modules/trading/routes'
import { uploadRoutes } from './modules/uploads/routes'

/** Builds the HTTP app from explicit dependencies; no I/O happens here. */
export function createApp(deps: Deps, opts: { adapter?: ElysiaConfig<''>['adapter'] } = {}) {
  const ctx = buildContext(deps)
  const app = new Elysia({
    name: 'trading-client-service',
    seed: ctx.instanceId,
    // Responses are checked, not encoded: no response schema holds a transform (integers are plain JSON
    // integers, kernel/schemas), and TypeBox's Encode walk cost a fifth of a hot read when they did.
    encodeSchema: false,
    // Inputs are validated as sent, not normalized first: Elysia's normalization turned a text into an
    // object for a map field ("12" -> {"0":"1","1":"2"}) and filled a missing enum field with its first
    // value. Unknown body fields are refused (400 naming them); query schemas allow unknown parameters.
    normalize: false,
    adapter: opts.adapter,
  })
    .use(httpPlatform(ctx))
    .use(openapiPlugin(ctx.instanceId, deps.loadAsset))
    .use(healthRoutes(ctx))
    .use(authRoutes(ctx))
    .use(accountRoutes(ctx))
    .use(uploadRoutes(ctx))
    .use(managerRoutes(ctx))
    .use(tradingRoutes(ctx))
    .use(marketRoutes(ctx))
    .use(marketAdminRoutes(ctx))
    .use(notificationRoutes(ctx))
    .use(scriptRoutes(ctx))
    .use(alertRoutes(ctx))
  recordBodyKinds(app, ctx.routeBodies)
  return Object.assign(app, { ctx })
}

/**
 * What body each route declared (`parse`: JSON by default, multipart for uploads; `doc(..., { optionalBody })`
 * for a JSON object that may be left out), for the guards to read.
 */
function recordBodyKinds(
  app: { routes: { method: string; path: string; hooks: unknown }[] },
  into: Map<string, BodyKind>,
) {
  for (const r of app.routes) {
    const hooks = r.hooks as { body?: unknown; parse?: { fn: unknown }[]; detail?: Record<string, unknown> }
    const declared = (hooks.parse ?? []).map((p) => p.fn).filter((fn): fn is string => typeof fn === 'string')
    let kind: BodyKind = 'json'
    if (!hooks.body) kind = 'none'
    else if (declared.includes('multipart/form-data')) kind = 'multipart'
    else if (hooks.detail?.['x-body-optional']) kind = 'optional-json'
    into.set(`${r.method} ${r.path}`, kind)
  }
}

export type App = ReturnType<typeof createApp>
