import { type AnyElysia, Elysia } from 'elysia'
import { auditRoutes } from './audit/routes'
import { configurePasswordWork } from './auth/passwords'
import { seedDemoBrands } from './brand/demo'
import { siteDeclarations } from './brand/sites'
import { eventJobs } from './events/jobs'
import { Relay, type RelayOptions } from './events/relay'
import type { BodyKind } from './http/body'
import { healthRoutes } from './http/health'
import { httpPlatform } from './http/http'
import { kernelRoutes } from './http/kernel-routes'
import { openapiPlugin, SYSTEM_TAG } from './http/openapi'
import { JobRunner } from './jobs/runner'
import { createKernel, type Deps } from './kernel'
import type { ModuleDefinition, ModuleParts } from './module'

interface AppOptions {
  relay?: Partial<Omit<RelayOptions, 'owner'>>
  /**
   * The edge: no code generation (Elysia's dynamic mode), and no work that outlives a request (the
   * relay is not woken by writes; `scheduled()` delivers events).
   */
  edge?: boolean
  /**
   * Success answers for the document, by operation (`GET /account/me`): recorded from a demo run
   * (src/main/openapi-examples.json, `npm run openapi:examples`), so each example is a real answer.
   */
  examples?: Record<string, unknown>
}

/**
 * Builds the service from explicit dependencies and a list of modules (no I/O here): the kernel, then
 * each module in list order (it takes the ports of the ones before it), the event consumers, the jobs
 * and the HTTP app. It names no module: the entries pass the list (src/main/modules.ts).
 */
export function createApp(deps: Deps, modules: readonly ModuleDefinition[], opts: AppOptions = {}) {
  const kernel = createKernel(deps, opts.edge ?? false)
  configurePasswordWork(deps.config.passwordWork)
  kernel.sites = siteDeclarations(modules.flatMap((m) => m.sites ?? []))
  const parts: (ModuleParts & { module: string })[] = modules.map((m) => ({
    module: m.name,
    ...m.setup(kernel, kernel.ports),
  }))
  kernel.events.register(parts.flatMap((p) => p.consumers ?? []))
  for (const p of parts) if (p.engine) kernel.role.register(p.engine)
  const relay = new Relay(deps.db, kernel.events, deps.clock, deps.logger, {
    owner: kernel.origin,
    ...opts.relay,
  })
  if (!opts.edge) kernel.events.onWake(() => relay.wake())
  const jobs = [
    ...eventJobs(deps.db, deps.clock, relay, deps.config.eventsRetentionMs, opts.edge),
    ...parts.flatMap((p) => p.jobs ?? []),
  ]
  const runner = new JobRunner(
    jobs,
    kernel.leases,
    kernel.origin,
    deps.clock,
    deps.logger,
    () => kernel.engine.isLeader,
    opts.edge,
  )

  let app: AnyElysia = new Elysia({
    name: 'trading-client-service',
    seed: kernel.instanceId,
    // Responses are checked, not encoded: no response schema holds a transform (integers are plain JSON
    // integers, kernel/http/schemas), and TypeBox's Encode walk cost a fifth of a hot read when they did.
    encodeSchema: false,
    // Inputs are validated as sent, not normalized first (ADR 0006).
    normalize: false,
    // workerd refuses code generated from strings once a request runs
    ...(opts.edge ? { aot: false } : {}),
  })
    .use(httpPlatform(kernel))
    .use(
      openapiPlugin(
        kernel.instanceId,
        deps.loadAsset,
        [SYSTEM_TAG, ...modules.flatMap((m) => m.tags ?? [])],
        {
          jobNames: jobs.map((j) => j.name),
          examples: opts.examples,
          securitySchemes: Object.assign({}, ...modules.map((m) => m.securitySchemes ?? {})),
          confinements: modules.flatMap((m) => m.confinements ?? []),
          sites: [...kernel.sites.values()],
        },
      ),
    )
    .use(healthRoutes(kernel))
    .use(kernelRoutes(kernel, runner))
    .use(auditRoutes(kernel))
  for (const p of parts) if (p.routes) app = app.use(p.routes)
  recordBodyKinds(app, kernel.routeBodies)

  const lifecycle = {
    /**
     * Loads what the modules keep in memory before serving, then takes the engine role if it is free
     * (loading the books of resting orders and alerts); with `standby`, keeps trying while another
     * instance holds it (a server; tests take it once).
     */
    async start(o: { standby?: boolean } = {}) {
      for (const p of parts) await p.start?.()
      await kernel.role.start(o.standby ?? false)
    },
    /** The instance begins to shut down: streams end, readiness says draining (kernel.closing). */
    close() {
      kernel.close()
    },
    async stop() {
      kernel.close()
      await runner.stop()
      await relay.stop()
      // modules write what the engine holds (candles, latest quotes) before the role is given up
      for (const p of [...parts].reverse()) await p.stop?.()
      await kernel.role.stop()
      // the outcomes of the last staff actions, before the database is closed
      await kernel.audit.settled()
    },
    /** Demo data of the kernel (brands) and of every module, in list order; idempotent. */
    async seedDemo() {
      // consumers of what one module seeds may read what a later one seeds: they run once all is in
      await relay.whilePaused(async () => {
        await seedDemoBrands(kernel)
        for (const p of parts) await p.seedDemo?.()
      })
    },
  }
  return Object.assign(app as Elysia, { kernel, runner, relay, lifecycle, jobs })
}

/**
 * What body each route declared (`parse`: JSON by default, multipart for uploads; `doc(..., { optionalBody })`
 * for a JSON object that may be left out), for the guards to read.
 */
function recordBodyKinds(app: AnyElysia, into: Map<string, BodyKind>) {
  for (const r of app.routes) {
    const hooks = r.hooks as { body?: unknown; parse?: { fn: unknown }[]; detail?: Record<string, unknown> }
    const declared = (hooks.parse ?? []).map((p) => p.fn).filter((fn): fn is string => typeof fn === 'string')
    let kind: BodyKind = 'json'
    if (hooks.detail?.['x-body-raw']) kind = 'raw'
    else if (!hooks.body) kind = 'none'
    else if (declared.includes('multipart/form-data')) kind = 'multipart'
    else if (hooks.detail?.['x-body-optional']) kind = 'optional-json'
    into.set(`${r.method} ${r.path}`, kind)
  }
}
