import type { Config } from './config'
import { AccessTokens } from './kernel/auth/tokens'
import type { BodyKind } from './kernel/body'
import { BrandRegistry } from './kernel/brand/registry'
import type { KeyValueStore } from './kernel/cache'
import type { Clock } from './kernel/clock'
import type { Db } from './kernel/db/client'
import type { GroupCommit } from './kernel/db/group-commit'
import type { Logger } from './kernel/logger'
import type { FileStorage } from './kernel/storage/port'
import type { AccountRecord, GroupRecord } from './modules/accounts/read-model'
import { AccountReadModel } from './modules/accounts/read-model'
import { AlertEngine } from './modules/alerts/engine'
import { Principals } from './modules/auth/principals'
import { CandleStore } from './modules/market/candle-store'
import { QuoteHub } from './modules/market/quotes'
import { ReferenceData } from './modules/market/reference'
import { bumpWatchVersion } from './modules/market/service'
import { TriggerEngine } from './modules/trading/engine'
import { accountExposure, type Exposure } from './modules/trading/exposure'
import { type Opened, type OpenRequest, openCommitter } from './modules/trading/open-commit'
import { PositionReadModel } from './modules/trading/positions'

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
  /** The records behind sessions (enabled, session epoch), checked by the route guard on every request. */
  principals: Principals
  /** The body each route accepts, keyed `METHOD /path` (filled by createApp from the routes' `parse`). */
  routeBodies: Map<string, BodyKind>
  brands: BrandRegistry
  accountsRead: AccountReadModel
  refdata: ReferenceData
  candles: CandleStore
  quotes: QuoteHub
  positions: PositionReadModel
  engine: TriggerEngine
  alerts: AlertEngine
  /** Group commit of trade opens (one transaction per burst). */
  tradeOpens: GroupCommit<OpenRequest, Opened>
  /** Live exposure of an account's open positions (the trading module's answer to accounts). */
  exposure: (account: AccountRecord, group: GroupRecord) => Promise<Exposure | null>
  /** Random id of this app instance, written on the orders it changes (orders.origin). */
  origin: string
  /** Distinguishes app instances so Elysia does not deduplicate plugins across them. */
  instanceId: number
}

let instances = 0

export function buildContext(deps: Deps): AppContext {
  const refdata = new ReferenceData(deps.db, deps.store, deps.clock)
  const candles = new CandleStore(deps.db)
  const accountsRead = new AccountReadModel(deps.db, deps.store)
  const ctx = {
    ...deps,
    tokens: new AccessTokens(deps.config.jwt, deps.db, deps.store, deps.clock),
    principals: new Principals(accountsRead, deps.db, deps.store),
    routeBodies: new Map<string, BodyKind>(),
    brands: new BrandRegistry(deps.db),
    accountsRead,
    refdata,
    candles,
    quotes: new QuoteHub(deps.db, deps.store, refdata, candles, deps.clock, deps.logger),
    positions: new PositionReadModel(deps.db, deps.store, deps.logger),
    instanceId: ++instances,
    origin: crypto.randomUUID().slice(0, 8),
  } as AppContext
  ctx.engine = new TriggerEngine(ctx)
  ctx.alerts = new AlertEngine(ctx)
  ctx.tradeOpens = openCommitter(ctx)
  ctx.exposure = (account, group) => accountExposure(ctx, account, group)
  ctx.quotes.onTicks((ticks) => ctx.engine.onTicks(ticks))
  ctx.quotes.onTicks((ticks) => ctx.alerts.onTicks(ticks))
  // When an hourly candle closes, cached watch lists expire (their key holds the candle version).
  candles.onBarClosed((_symbol, _bar, hourClosed) => {
    if (hourClosed) void bumpWatchVersion(ctx)
  })
  return ctx
}
