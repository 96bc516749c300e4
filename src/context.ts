import type { Config } from './config'
import { AccountReadModel } from './modules/accounts/read-model'
import { AccessTokens } from './platform/auth/tokens'
import { BrandRegistry } from './platform/brand/registry'
import type { KeyValueStore } from './platform/cache'
import type { Clock } from './platform/clock'
import type { Db } from './platform/db/client'
import type { Logger } from './platform/logger'
import type { FileStorage } from './platform/storage/port'

/** What createApp needs from the outside world; both entries build it, tests build their own. */
export interface Deps {
  config: Config
  db: Db
  store: KeyValueStore
  clock: Clock
  logger: Logger
  storage: FileStorage
  /** Static assets such as the Swagger UI bundle; each entry knows where they live. */
  loadAsset: (name: string) => Promise<Response | null>
}

/** Deps plus the shared services built from them once per app. Use cases receive it as `ctx`. */
export interface AppContext extends Deps {
  tokens: AccessTokens
  brands: BrandRegistry
  accountsRead: AccountReadModel
  /** Distinguishes app instances so Elysia does not deduplicate plugins across them. */
  instanceId: number
}

let instances = 0

export function buildContext(deps: Deps): AppContext {
  return {
    ...deps,
    tokens: new AccessTokens(deps.config.jwt, deps.store, deps.clock),
    brands: new BrandRegistry(deps.db),
    accountsRead: new AccountReadModel(deps.db, deps.store),
    instanceId: ++instances,
  }
}
