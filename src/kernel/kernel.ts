import { StaffAudit } from './audit/recorder'
import type { PrincipalDirectory } from './auth/session'
import { AccessTokens } from './auth/tokens'
import { BrandRegistry } from './brand/registry'
import type { SiteDeclaration } from './brand/sites'
import type { MessageBus } from './bus/bus'
import type { KeyValueStore } from './cache'
import type { Clock } from './clock'
import type { Config } from './config'
import type { Db } from './db/client'
import { UnitOfWork } from './db/unit-of-work'
import { EngineRole } from './engine/role'
import { Events } from './events/events'
import type { BodyKind } from './http/body'
import { DbLeases, type Leases, StoreLeases } from './jobs/leases'
import type { Logger } from './logger'
import { definePort, Ports } from './ports'
import type { FileStorage } from './storage/port'

/** What the kernel needs from the outside world; each entry builds it, tests build their own. */
export interface Deps {
  config: Config
  db: Db
  store: KeyValueStore
  clock: Clock
  logger: Logger
  storage: FileStorage
  /** Ticks and changes every instance sees in one order (in-process, or a Redis stream). */
  bus: MessageBus
  /** Static assets such as the Swagger UI bundle; each entry knows where they live. */
  loadAsset: (name: string) => Promise<Response | null>
}

/**
 * The shared layer every module receives: the infrastructure ports (database, cache, clock, logger,
 * files), tokens and brands, the event log and the unit of work, and the registry of module ports. It
 * imports nothing from modules/.
 */
export interface Kernel extends Deps {
  /** Distinguishes app instances in one process, so Elysia does not deduplicate their plugins. */
  instanceId: number
  /** Random id of this process (outbox leases, job leases, orders.origin). */
  origin: string
  ports: Ports
  tokens: AccessTokens
  brands: BrandRegistry
  /** The sites the modules declare besides each brand's own, by name (filled before their setup). */
  sites: ReadonlyMap<string, SiteDeclaration>
  events: Events
  uow: UnitOfWork
  /** The body each route accepts, keyed `METHOD /path` (filled from the routes' `parse` once they exist). */
  routeBodies: Map<string, BodyKind>
  /** What staff sessions change (and open, where a route opts in), written before the change runs. */
  audit: StaffAudit
  /** Named leases (the shared cache when configured, else the database). */
  leases: Leases
  /**
   * Whether this instance owns the books and the tick loop (docs/architecture.md, runtime roles). What a
   * module does as the engine it declares (ModuleParts.engine); it registers nothing here.
   */
  engine: EngineStatus
  /**
   * Aborted when the instance begins to shut down (SIGTERM): what stays open on its own (a stream of
   * quotes) ends, so clients reconnect to another instance, and in-flight requests can finish.
   */
  closing: AbortSignal
  /**
   * The app runs at the edge (Workers: Elysia's dynamic mode, which validates a handler's Response object
   * against the route's JSON schema): a handler answers the value rather than a Response it built, and
   * no load of what the instance keeps in memory is shared between requests (kernel/single-flight).
   */
  edge: boolean
}

/** What a module may ask of the engine role. */
type EngineStatus = Pick<EngineRole, 'isLeader' | 'holder'>

/** The records behind sessions (enabled, same brand, same session epoch): the auth module provides it. */
export const PrincipalsPort = definePort<PrincipalDirectory>('kernel.principals')

let instances = 0

/** The kernel and, for createApp alone, the engine role itself (it registers the modules' engine parts). */
export function createKernel(deps: Deps, edge = false): Kernel & { role: EngineRole; close(): void } {
  const events = new Events()
  const leases =
    deps.config.cache.kind === 'memory' ? new DbLeases(deps.db, deps.clock) : new StoreLeases(deps.store)
  const origin = crypto.randomUUID().slice(0, 8)
  const role = new EngineRole(deps.config.role, deps.bus, leases, deps.store, origin, deps.logger)
  const closing = new AbortController()
  return {
    ...deps,
    closing: closing.signal,
    close: () => closing.abort(),
    edge,
    instanceId: ++instances,
    origin,
    leases,
    engine: role,
    role,
    ports: new Ports(),
    tokens: new AccessTokens(deps.config.jwt, deps.db, deps.store, deps.clock),
    brands: new BrandRegistry(deps.db, edge),
    sites: new Map(),
    events,
    uow: new UnitOfWork(deps.db, events, deps.clock, deps.logger),
    routeBodies: new Map(),
    audit: new StaffAudit(deps.db, deps.clock, deps.logger, edge),
  }
}
