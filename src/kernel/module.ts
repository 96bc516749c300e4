import type { AnyElysia } from 'elysia'
import type { ZodType } from 'zod'
import type { ConfinementDeclaration } from './auth/session'
import type { SiteDeclaration } from './brand/sites'
import type { EnginePart } from './engine/part'
import type { Consumer } from './events/topic'
import type { Tag } from './http/openapi'
import type { Job } from './jobs/job'
import type { Kernel } from './kernel'
import type { Ports } from './ports'

export { definePort, type PortKey, Ports } from './ports'

/** What a module contributes once it is set up. */
export interface ModuleParts {
  /** Its HTTP routes (an Elysia plugin using the kernel's guards). */
  routes?: AnyElysia
  /** Reactions to events of other modules, delivered once each by the relay. */
  consumers?: Consumer<any>[]
  /** Periodic work, run by the job runner, the cron route and the Workers `scheduled()` handler. */
  jobs?: Job[]
  /** Loads its in-memory state before the instance serves (books of resting orders, alerts). */
  start?(): Promise<void>
  /** Writes what it holds in memory before the process ends. */
  stop?(): Promise<void>
  /** Demo data of its own (development), idempotent: safe when two instances boot at once. */
  seedDemo?(): Promise<void>
  /**
   * What it does while its instance holds the engine role (kernel/engine): load its books when the role
   * is taken (and drop them when it is given up), handle the bus channels it listens to, in bus order,
   * and settle what the handlers of one read decided (one commit per read of the bus).
   */
  engine?: EnginePart
}

/**
 * The module contract (docs/architecture.md): a name, its tables (drizzle-kit collects every
 * `modules/<m>/schema.ts`), and `setup`, which builds its services from the kernel and the ports of the
 * modules before it, provides its own ports, and returns its routes, consumers and jobs.
 */
export interface ModuleDefinition {
  name: string
  /** Its OpenAPI tags (name and description), in the order Swagger UI shows them. */
  tags?: Tag[]
  /** OpenAPI security schemes of its own guards (its tokens), by name. */
  securitySchemes?: Record<string, Record<string, unknown>>
  /** The confinements its principal directory may put sessions under (PrincipalDirectory.confinement). */
  confinements?: readonly ConfinementDeclaration[]
  /**
   * The environment variables it reads (the schema of its `config.ts`, read in `setup` with
   * `moduleConfig`): the entries check them with the kernel's before anything starts (`loadConfig`).
   */
  env?: ZodType
  /**
   * The sites of every brand it serves besides the brand's own (kernel/brand/sites.ts): a brand's hosts of
   * each are rows of `brand_hosts`, and its routes guarded `site` answer there only.
   */
  sites?: SiteDeclaration[]
  tables: Record<string, unknown>
  setup(kernel: Kernel, ports: Ports): ModuleParts
}

export const defineModule = (m: ModuleDefinition) => m

export type { SiteDeclaration } from './brand/sites'
export type { EnginePart } from './engine/part'
