import { sql } from 'drizzle-orm'
import { Elysia, t } from 'elysia'
import type { Kernel } from '../kernel'
import { API_VERSION, doc } from './openapi'

const Health = t.Object({
  status: t.Union([t.Literal('ok'), t.Literal('degraded'), t.Literal('down')]),
  version: t.String(),
  db: t.Union([t.Literal('ok'), t.Literal('error')]),
  cache: t.Union([t.Literal('ok'), t.Literal('error')]),
  cache_kind: t.String(),
})

/** Liveness for load balancers; answers on any host. 503 only when the database is unreachable. */
export const healthRoutes = (ctx: Kernel) =>
  new Elysia({ name: 'health-routes', seed: ctx.instanceId }).get(
    '/health',
    async ({ set }) => {
      const db = await ctx.db
        .run(sql`select 1`)
        .then(() => 'ok' as const)
        .catch(() => 'error' as const)
      const cache = (await ctx.store.ping().catch(() => false)) ? ('ok' as const) : ('error' as const)
      const status = db === 'error' ? 'down' : cache === 'error' ? 'degraded' : 'ok'
      if (db === 'error') set.status = 503
      return { status, version: API_VERSION, db, cache, cache_kind: ctx.store.kind } as const
    },
    {
      response: { 200: Health, 503: Health },
      detail: doc('System', 'Health of the service, its database and its cache', { secured: false }),
    },
  )
