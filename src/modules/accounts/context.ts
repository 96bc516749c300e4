import type { Queryable } from '../../kernel/db/client'
import type { Kernel } from '../../kernel/kernel'
import type { UploadsApi } from '../uploads'
import type { AccountsConfig } from './config'
import type { AccountReadModel, AccountRecord, GroupRecord } from './read-model'

/** What open positions add to an account's figures, in its currency (major units). */
export interface Exposure {
  floatingProfit: number
  margin: number
  commission: number
  storage: number
}

/**
 * Prices an account's open positions; the trading module provides it (null when a price is missing). With
 * `q` (a transaction), the positions are read there instead of from the cached read model: money that
 * leaves checks the positions its transaction sees, at current prices only (503 PRICE_STALE otherwise).
 */
export type ExposureSource = (
  account: Pick<AccountRecord, 'login' | 'leverage'>,
  group: GroupRecord,
  q?: Queryable,
) => Promise<Exposure | null>

/**
 * The symbols an account holds open positions or pending orders in that a group could not price and trade
 * (no settings for their security group there, hidden or not tradable), the orders read in `q` (the move's
 * write transaction): a group move to such a group is refused. The trading module provides it.
 */
export type UnfitSymbols = (q: Queryable, login: number, groupId: number) => Promise<string[]>

/**
 * Why an account's money is not its customer's to move (prop's challenge accounts hold the firm's
 * capital), or null: the extension point ManagedFundsPort.
 */
export type ManagedFunds = (login: number) => Promise<string | null>

/**
 * Why a group of the brand may not be renamed, or null: a module that names the group (prop's programs,
 * and the steps of the challenges bought from them, open their accounts in it by name) says so, read in
 * `q` (the rename's write transaction): the extension point GroupNamesPort.
 */
export type GroupNameUse = (q: Queryable, brandId: number, name: string) => Promise<string | null>

/**
 * Why an account currency cannot be used, or null: nothing on the deployment would convert its profits
 * and margins (market provides it: the extension point CurrencyUsePort).
 */
export type CurrencyUse = (currency: string) => Promise<string | null>

/** What the accounts module's services work with: the kernel, its read model, and what it asks of others. */
export interface AccountsCtx extends Kernel {
  settings: AccountsConfig
  accountsRead: AccountReadModel
  uploads: UploadsApi
  /** The exposure of open positions (read when used: trading is set up after accounts). */
  exposure: ExposureSource
  /** GroupFitPort, read when used (trading is set up after accounts); none without it. */
  unfitSymbols: UnfitSymbols
  /** ManagedFundsPort, read when used (prop is set up after accounts); null without it. */
  managedFunds: ManagedFunds
  /** GroupNamesPort, read when used (prop is set up after accounts); null without it. */
  groupNameUse: GroupNameUse
  /** CurrencyUsePort, read when used (market is set up after accounts); any currency without it. */
  currencyUse: CurrencyUse
}
