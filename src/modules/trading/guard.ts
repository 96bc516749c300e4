import { definePort } from '../../kernel/module'

/** What a client (a SESSION_USER, not staff or a module) asks to do to an account's trades. */
export type ManualAction = 'open' | 'close' | 'modify' | 'cancel'

/**
 * Extension point: a module that manages an account's trades (copy trading's `manual_trading_mode`)
 * may refuse a client's own action on it; the answer is the reason (403 MANUAL_TRADING_DISABLED), or null.
 * `ticket` names the order acted on; without one (a group close) any managed position counts.
 */
export type ManualTradeGuard = (
  login: number,
  action: ManualAction,
  ticket?: number,
) => Promise<string | null>

export const ManualTradeGuardPort = definePort<ManualTradeGuard>('trading.manual-guard')
