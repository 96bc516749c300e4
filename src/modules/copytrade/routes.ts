import { Elysia } from 'elysia'
import type { CopyCtx } from './context'
import { followerRoutes } from './follower-routes'
import { masterRoutes } from './master-routes'
import { subscriptionRoutes } from './subscription-routes'

export { copyStaffRoutes } from './staff-routes'

/** Customer routes of spec 4.12 (paths and payloads designed here; README.md of this folder), by resource. */
export const copyRoutes = (ctx: CopyCtx) =>
  new Elysia({ name: 'copytrade-routes', seed: ctx.instanceId })
    .use(masterRoutes(ctx))
    .use(followerRoutes(ctx))
    .use(subscriptionRoutes(ctx))
