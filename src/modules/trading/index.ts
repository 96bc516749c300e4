import { onChannel } from '../../kernel/bus/channel'
import { defineModule, definePort } from '../../kernel/module'
import { AccountsPort, ExposurePort, GroupFitPort } from '../accounts'
import { MarketPort, SymbolHoldersPort } from '../market'
import { accountExposure } from './book/exposure'
import { accountFigures, positionsOf, recentPositionsOf } from './book/figures'
import { heldByGroup, holderGroups, unfitSymbols } from './book/group-fit'
import { PositionReadModel } from './book/positions'
import { closeCommitter } from './commit/close-commit'
import { openCommitter } from './commit/open-commit'
import { ACCOUNTS_CHANGED, accountChangeConsumers, GROUPS_CHANGED, groupChangeConsumer } from './consumers'
import type { TradingCtx } from './context'
import type { RiskWatcher } from './engine/risk-watch'
import { ORDERS_CHANGED, TriggerEngine } from './engine/trigger-engine'
import { refuse } from './errors'
import { tradingRoutes } from './routes'
import * as schema from './schema'
import type { TradingServices } from './service'
import { expireRequestKeys } from './service/requests-expire'
import { type TradingWritePort, writePort } from './write-port'

export type { RiskRoom, RiskWatcher } from './engine/risk-watch'
export * from './events'
export { type ManualAction, type ManualTradeGuard, ManualTradeGuardPort } from './guard'
export type { OrderState, SystemRequest, TradeResult } from './write-port'

/** What other modules ask of trading: reads, the risk watch, and the write port for a system actor. */
export interface TradingApi extends TradingWritePort {
  /** Registers the engine's risk watcher (one per deployment: prop challenges' loss limits). */
  watchRisk(w: RiskWatcher): void
  /** Open positions of a login now. */
  openPositions(login: number): Promise<number>
  /** Balance and equity (minor units, floating profit included) of many logins; null without a price. */
  figures(logins: number[]): Promise<Map<number, { balance: number; equity: number } | null>>
  /** The positions of many logins opened since `since`: open and close times (ms; close 0 while open). */
  positionsOf(
    logins: number[],
    since: number,
  ): Promise<Map<number, { openTime: number; closeTime: number }[]>>
  /** The open positions of many logins, and those closed since `since`, as `positionsOf` gives them. */
  recentPositionsOf(
    logins: number[],
    since: number,
  ): Promise<Map<number, { openTime: number; closeTime: number }[]>>
}

export const TradingPort = definePort<TradingApi>('trading')

/** Orders, positions, triggers, stop-outs and swaps (README.md of this folder). */
const moneyOutStale = (why: string) =>
  refuse('priceStale', `${why}; no money leaves an account with open positions at an old price, retry later`)

export const tradingModule = defineModule({
  name: 'trading',
  tags: [
    { name: 'Trading', description: 'Orders and positions: open, modify, close, cancel, list, history' },
  ],
  tables: schema,
  setup(k, ports) {
    const accounts = ports.get(AccountsPort)
    const market = ports.get(MarketPort)
    const ctx: TradingCtx = {
      ...k,
      accounts,
      accountsRead: accounts.read,
      market,
      refdata: market.refdata,
      quotes: market.quotes,
      positions: new PositionReadModel(k.db, k.store, k.logger),
    }
    const engine = new TriggerEngine(ctx)
    const services: TradingServices = {
      ...ctx,
      triggers: engine,
      tradeOpens: openCommitter(ctx, (rows) => engine.changed(rows)),
      tradeCloses: closeCommitter(ctx, (rows) => engine.changed(rows)),
    }
    ports.provide(TradingPort, {
      ...writePort(services),
      watchRisk: (w) => engine.setRiskWatcher(w),
      openPositions: async (login) => (await ctx.positions.open(login)).length,
      figures: (logins) => accountFigures(ctx, logins),
      positionsOf: (logins, since) => positionsOf(k.db, logins, since),
      recentPositionsOf: (logins, since) => recentPositionsOf(k.db, logins, since),
    })
    // the accounts module prices open positions through this extension point (GET /account/me)
    // with `q`, money leaves (a withdrawal, a fee, a payout): checked at current prices only
    ports.provide(ExposurePort, (account, group, q) =>
      accountExposure(ctx, account, group, q, q ? moneyOutStale : undefined),
    )
    // a group move, and a symbol's move to another security group, refused while it would strand orders
    ports.provide(GroupFitPort, (q, login, groupId) => unfitSymbols(ctx, q, login, groupId))
    ports.provide(SymbolHoldersPort, {
      groups: (q, symbol) => holderGroups(ctx, q, symbol),
      inGroup: (q, brandId, groupId, symbols) => heldByGroup(ctx, q, brandId, groupId, symbols),
    })
    // the engine role (kernel/engine): one instance holds the books and sees every tick and order change
    market.quotes.onEngineTicks((ticks, meta) => engine.onTicks(ticks, { replay: meta.replay }))
    return {
      // the engine role: its books, the order and account changes of other instances, one commit per read
      engine: {
        load: () => engine.load(),
        unload: () => engine.reset(),
        handlers: [
          onChannel(ORDERS_CHANGED, (entries) => engine.onChangedEntries(entries)),
          onChannel(ACCOUNTS_CHANGED, (entries) => engine.accountsChanged(entries.flatMap((e) => e.data))),
          onChannel(GROUPS_CHANGED, (entries) => engine.groupsChanged(entries.flatMap((e) => e.data))),
        ],
        settle: () => engine.settle(),
      },
      routes: tradingRoutes(services),
      consumers: [...accountChangeConsumers(k.bus, k.logger), groupChangeConsumer(k.bus, k.logger)],
      jobs: [
        {
          name: 'trading.requests-expire',
          every: 3_600_000,
          scope: 'cluster',
          run: ({ now }) => expireRequestKeys(k.db, now),
        },
        // order changes reach the engine through the bus at once; this re-read of recent writes is the
        // safety net (a change published while the role moved)
        { name: 'trading.resync', every: 2000, scope: 'engine', run: () => engine.resync() },
        // pending orders expire at their time, ticks or none (the engine also expires them after each tick)
        { name: 'trading.expire', every: 1000, scope: 'engine', run: () => engine.expire() },
        // conditional on each position's rollover day, so a second run in a day charges nothing
        {
          name: 'trading.rollover',
          every: 60_000,
          scope: 'engine',
          run: async () => {
            await engine.rollover()
            // the safety net of the price bands: a change no event reports (group or symbol settings)
            engine.recheckAll()
          },
        },
      ],
    }
  },
})
export { CMD_NAMES } from './domain/checks'
export { profitInAccount, type SymbolSpec } from './domain/formulas'

// its routes, for the type of the whole API (src/main/app-type.ts: Eden treaty)
export { tradingRoutes } from './routes'
