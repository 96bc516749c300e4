import { sql } from 'drizzle-orm'
import { Elysia, t } from 'elysia'
import type { Kernel } from '../kernel'
import { API_VERSION, doc } from './openapi'
import { Int, nameModels } from './schemas'

const State = t.Union([t.Literal('up'), t.Literal('down')])
const Check = t.Object({
  state: State,
  latency_ms: t.Union([t.Number(), t.Null()], { description: 'time the probe took; null when it failed' }),
  error: t.Optional(t.String({ description: 'why it is down' })),
})

const Health = t.Object(
  {
    status: t.Union([t.Literal('ok'), t.Literal('degraded'), t.Literal('draining')], {
      description:
        'degraded (HTTP 503) when the database, its write path, the cache or the bus of this instance is down; draining (HTTP 503) while it shuts down',
    }),
    version: t.String(),
    role: t.String({ description: 'ROLE of this instance: all, api or engine' }),
    db: t.Union([t.Literal('ok'), t.Literal('error')]),
    cache: t.Union([t.Literal('ok'), t.Literal('error')]),
    cache_kind: t.String(),
    checks: t.Object({
      database: Check,
      writes: t.Object(
        {
          ...Check.properties,
          waiting: Int({
            description: 'transactions of this instance waiting for their turn to write',
          }),
          oldest_wait_ms: Int({ description: 'how long the oldest of them has waited' }),
        },
        {
          description:
            'The write path: a write transaction (BEGIN IMMEDIATE) bounded by 2 s, and the queue of transactions waiting for the write lock. Down when the probe fails or times out, or a transaction has waited over 2 s: the database answers reads but takes no writes.',
        },
      ),
      events: t.Object(
        {
          state: State,
          undelivered: Int({ description: 'events not yet delivered to every consumer' }),
          due: Int({ description: 'of those, the ones due now (not waiting for a retry)' }),
          oldest_due_age_ms: Int({ description: 'age of the oldest event due now; 0 when none' }),
          error: t.Optional(t.String()),
        },
        {
          description:
            'The outbox backlog of the deployment (informative: every instance relays, so it does not make this one 503).',
        },
      ),
      cache: t.Object({ ...Check.properties, kind: t.String() }),
      bus: t.Object({
        ...Check.properties,
        kind: t.String(),
        clock_offset_ms: t.Union([t.Number(), t.Null()], {
          description:
            "Redis's clock less this host's, as this instance's appends measured it (null before one; on the local bus). Informative: a tick's publish bound is in Redis's clock, so skew does not fail or admit publishes; above about 200 ms check the hosts' time sync.",
        }),
      }),
      engine: t.Object({
        state: State,
        this_instance: t.Boolean({ description: 'this instance holds the engine role' }),
        error: t.Optional(t.String()),
      }),
    }),
  },
  {
    description:
      'Readiness. The engine check is informative: without an engine SL/TP/stop-out wait for one (a standby takes the role within 3 s), but the instance still serves, so it does not make the answer 503.',
  },
)

const Live = t.Object({ status: t.Literal('ok'), version: t.String() })

const PROBE_MS = 2000

/** `run`'s answer, or a rejection once PROBE_MS have passed without one (a hung dependency). */
async function bounded<T>(run: () => Promise<T>): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  try {
    return await Promise.race([
      run(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer in ${PROBE_MS} ms`)), PROBE_MS)
      }),
    ])
  } finally {
    clearTimeout(timer)
  }
}

/** Runs a probe bounded by PROBE_MS: up with its latency, or down with the reason. */
async function probe(run: () => Promise<unknown>) {
  const started = performance.now()
  try {
    const ok = await bounded(run)
    if (ok === false) return { state: 'down' as const, latency_ms: null, error: 'no answer' }
    return { state: 'up' as const, latency_ms: Math.round((performance.now() - started) * 100) / 100 }
  } catch (e) {
    return { state: 'down' as const, latency_ms: null, error: e instanceof Error ? e.message : String(e) }
  }
}

/** A transaction that has waited this long for the write lock means the write path is stalled. */
const STALLED_MS = 2000

/** The write path: a bounded write transaction, and this instance's queue of writers. */
async function writePath(ctx: Kernel) {
  const p = await probe(() => ctx.db.transaction((tx) => tx.execute('select 1')))
  const q = ctx.db.writeQueue()
  const waiting = q?.waiting ?? 0
  const oldest = Math.max(q?.oldestWaitMs ?? 0, q?.batchAgeMs ?? 0)
  if (p.state === 'up' && oldest > STALLED_MS)
    return {
      state: 'down' as const,
      latency_ms: p.latency_ms,
      error: `write path stalled: a transaction has waited ${oldest} ms for the write lock`,
      waiting,
      oldest_wait_ms: oldest,
    }
  return { ...p, waiting, oldest_wait_ms: oldest }
}

async function backlog(ctx: Kernel) {
  const now = ctx.clock.now()
  try {
    // bounded as the probes are: a hung database must not hold up the answer (a hostile probe: with sqld
    // stopped, readiness answered only when it resumed)
    const r = (
      await bounded(() =>
        ctx.db.execute({
          sql: `select count(*) as n, coalesce(sum(next_at <= ?), 0) as due,
                     min(case when next_at <= ? then created_at end) as oldest
              from outbox where dispatched_at is null`,
          args: [now, now],
        }),
      )
    ).rows[0] as unknown as { n: number; due: number; oldest: number | null }
    return {
      state: 'up' as const,
      undelivered: Number(r.n),
      due: Number(r.due),
      oldest_due_age_ms: r.oldest === null ? 0 : Math.max(0, now - Number(r.oldest)),
    }
  } catch (e) {
    return {
      state: 'down' as const,
      undelivered: 0,
      due: 0,
      oldest_due_age_ms: 0,
      error: e instanceof Error ? e.message : String(e),
    }
  }
}

/** What this instance can reach now; each probe is bounded, and they run side by side. */
async function readiness(ctx: Kernel) {
  const [database, writes, events, cache, bus, holder] = await Promise.all([
    probe(() => ctx.db.run(sql`select 1`)),
    writePath(ctx),
    backlog(ctx),
    probe(() => ctx.store.ping()),
    ctx.bus.kind === 'local' ? probe(async () => true) : probe(() => ctx.bus.newest()),
    bounded(() => ctx.engine.holder()).then(
      (h) => ({ h, error: undefined }),
      (e: unknown) => ({ h: null, error: e instanceof Error ? e.message : String(e) }),
    ),
  ])
  const engine = {
    state: holder.h ? ('up' as const) : ('down' as const),
    this_instance: ctx.engine.isLeader,
    ...(holder.h ? {} : { error: holder.error ?? 'no instance holds the engine role' }),
  }
  const degraded = [database, writes, cache, bus].some((c) => c.state === 'down')
  return {
    status: ctx.closing.aborted ? ('draining' as const) : degraded ? ('degraded' as const) : ('ok' as const),
    version: API_VERSION,
    role: ctx.config.role,
    db: database.state === 'up' && writes.state === 'up' ? ('ok' as const) : ('error' as const),
    cache: cache.state === 'up' ? ('ok' as const) : ('error' as const),
    cache_kind: ctx.store.kind,
    checks: {
      database,
      writes,
      events,
      cache: { ...cache, kind: ctx.store.kind },
      bus: { ...bus, kind: ctx.bus.kind, clock_offset_ms: ctx.bus.clockOffsetMs ?? null },
      engine,
    },
  }
}

/**
 * Health for load balancers and orchestrators (README, Operations): `/health/live` says the process
 * answers (restart it when it does not); `/health/ready` (and `/health`) says whether this instance can
 * serve: 503 `degraded` while its database, cache or bus is down. Both answer on any host.
 */
export const healthRoutes = (ctx: Kernel) => {
  const ready = async ({ set }: { set: { status?: number | string } }) => {
    const r = await readiness(ctx)
    if (r.status !== 'ok') set.status = 503
    return r
  }
  return new Elysia({ name: 'health-routes', seed: ctx.instanceId })
    .get('/health/live', () => ({ status: 'ok' as const, version: API_VERSION }), {
      response: { 200: Live },
      detail: doc('System', 'Liveness: the process answers (no dependency is asked)', {
        secured: false,
        description: 'For a liveness probe: restart the process when this does not answer 200.',
      }),
    })
    .get('/health/ready', ready, {
      response: { 200: Health, 503: Health },
      detail: doc('System', 'Readiness: database, cache, bus and engine, each with its state and latency', {
        secured: false,
        description:
          'For a readiness probe or a load balancer: 503 degraded while the database (reads, or its write path: a bounded write transaction and the age of the oldest transaction waiting for the write lock), cache or bus of this instance is down (take it out of rotation); the engine and the event backlog are reported, not required.',
      }),
    })
    .get('/health', ready, {
      response: { 200: Health, 503: Health },
      detail: doc('System', 'Readiness (the same as /health/ready)', {
        secured: false,
        description: 'The same answer as GET /health/ready, at the path load balancers often ask by default.',
      }),
    })
}

nameModels({ Health, HealthCheck: Check, Liveness: Live })
