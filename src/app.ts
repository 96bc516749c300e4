import { Elysia, type ElysiaConfig } from 'elysia'
import { buildContext, type Deps } from './context'
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
import { httpPlatform } from './platform/http'
import { openapiPlugin } from './platform/openapi'

/** Builds the HTTP app from explicit dependencies; no I/O happens here. */
export function createApp(deps: Deps, opts: { adapter?: ElysiaConfig<''>['adapter'] } = {}) {
  const ctx = buildContext(deps)
  const app = new Elysia({
    name: 'trading-client-service',
    seed: ctx.instanceId,
    // Responses are checked, not encoded: no response schema holds a transform (integers are plain JSON
    // integers, platform/schemas), and TypeBox's Encode walk cost a fifth of a hot read when they did.
    encodeSchema: false,
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
  return Object.assign(app, { ctx })
}

export type App = ReturnType<typeof createApp>
