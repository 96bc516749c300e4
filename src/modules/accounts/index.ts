import { and, eq } from 'drizzle-orm'
import { Elysia } from 'elysia'
import type { Session } from '../../kernel/auth/session'
import type { Brand } from '../../kernel/brand/registry'
import { epochSeconds } from '../../kernel/clock'
import type { Queryable, Tx } from '../../kernel/db/client'
import type { Work } from '../../kernel/db/unit-of-work'
import { defineModule, definePort } from '../../kernel/module'
import { UploadsPort } from '../uploads'
import { AccountsEnv, accountsConfig } from './config'
import type {
  AccountsCtx,
  CurrencyUse,
  ExposureSource,
  GroupNameUse,
  ManagedFunds,
  UnfitSymbols,
} from './context'
import {
  accountCredentials,
  createCustomer,
  customerAccounts,
  customerByEmail,
  customerView,
  endSessions,
  type NewCustomer,
  setPasswordHash,
  upgradePasswordHash,
} from './customers'
import { closeDays } from './day-close'
import { seedDemoAccounts } from './demo'
import type { MarginSnapshot } from './domain/margin'
import { fundsOf, fundsRead, groupIdsOf, loginsOfGroup } from './funds'
import {
  type BalanceOperationInput,
  postOperationTx,
  postTradeResultsTx,
  type TransferInput,
  transferTx,
} from './ledger'
import { accountManagerRoutes } from './manager-routes'
import { type OpenAccountInput, openAccount } from './open'
import { AccountReadModel, type GroupRecord } from './read-model'
import { accountRoutes } from './routes'
import * as schema from './schema'
import { type AccountView, loadAccountView, loadAccountViewAs, marginIn, requireMargin } from './service'

export type {
  CurrencyUse,
  Exposure,
  ExposureSource,
  GroupNameUse,
  ManagedFunds,
  UnfitSymbols,
} from './context'
export { type MarginSnapshot, marginSnapshot, ownFreeMargin } from './domain/margin'
export {
  currencyDecimals,
  fromMinor,
  roundToCurrency,
  roundToMinor,
  toMinor,
  upgradeMajorFields,
} from './domain/money'
export * from './events'
export type { Funds } from './funds'
export type { BalanceOperationInput, TradeResultInput, TransferInput } from './ledger'
export { accountSignInIdentity } from './passwords'
export type { AccountReadModel, AccountRecord, CustomerRecord, GroupRecord } from './read-model'
export { Customer as CustomerSchema } from './routes'
export { type AccountView, accountNotFound, groupNotFound } from './service'

/** What other modules ask of accounts. */
export interface AccountsApi {
  /** Accounts, groups and customers through the shared cache; writers invalidate after commit. */
  read: AccountReadModel
  /** The account a session asks for, scoped by brand and owner (another's answers 404 ACCOUNT_NOT_FOUND). */
  loadAccountView(brand: Brand, session: Session, login: number | undefined): Promise<AccountView>
  /** The same, with the code a route's spec names for a login the session may not see. */
  loadAccountViewAs(
    brand: Brand,
    session: Session,
    login: number,
    notFound: () => Error,
  ): Promise<AccountView>
  /** Live margin figures (400 INVALID_MARGIN_LEVEL when they cannot be computed). */
  requireMargin(view: AccountView): Promise<MarginSnapshot>
  /** Margin figures of a login from its funds and positions as `q` (a transaction) sees them. */
  marginIn(q: Queryable, login: number): ReturnType<typeof marginIn>
  /**
   * Posts a balance or credit operation in the caller's unit of work (cashier credits, holds, reversals):
   * a repeated idempotency key returns the first row; a balance-out below zero is refused unless allowed.
   */
  postOperationTx(tx: Tx, work: Work, input: BalanceOperationInput): ReturnType<typeof postOperationTx>
  /**
   * Value from one account to another (OUT then IN), in the caller's unit of work; 409
   * ACCOUNT_MODE_MISMATCH between a DEMO and a REAL account: demo money never becomes real.
   */
  transferTx(tx: Tx, work: Work, input: TransferInput): ReturnType<typeof transferTx>
  /** Disables trading on an account (it may still sign in), in the caller's unit of work. */
  /** Makes an account read-only; `reason` is what a refused trade says (e.g. the breached challenge). */
  setReadOnlyTx(tx: Tx, work: Work, brandId: number, login: number, reason: string): Promise<void>
  /** Books closed trades' results as OP_TRADE ledger rows, in the closing transaction. */
  postTradeResultsTx: typeof postTradeResultsTx
  openAccount(input: OpenAccountInput): ReturnType<typeof openAccount>
  /** The amount of one of an account's ledger rows (integer minor units, signed), or null. */
  operationAmount(brandId: number, login: number, id: number): Promise<number | null>
  /** A group of the brand by name; `q`: read in the caller's transaction (what its write depends on). */
  findGroup(brandId: number, name: string, q?: Queryable): Promise<GroupRecord | null>
  /** Sign-in: the account or customer with its password hash. */
  accountCredentials(brandId: number, login: number): ReturnType<typeof accountCredentials>
  customerByEmail(brandId: number, email: string): ReturnType<typeof customerByEmail>
  customerAccounts(brandId: number, customerId: number): Promise<number[]>
  customerView: typeof customerView
  createCustomer(c: NewCustomer): Promise<{ created: boolean }>
  setPasswordHash(brandId: number, login: number, passwordHash: string): Promise<boolean>
  /** Ends every session of an account, or of a customer and its accounts; false when not the brand's. */
  endSessions(brandId: number, who: { account: number } | { customer: number }): Promise<boolean>
  /** A hash with older parameters, replaced after a sign-in proved the password (no session ends). */
  upgradePasswordHash(
    who: { account: number } | { customer: number },
    from: string,
    to: string,
  ): Promise<void>
  /** Why an account's money is not its customer's to move (ManagedFundsPort), or null. */
  managedFunds: ManagedFunds
  /** Balance, credit and leverage of logins, read in the caller's transaction (margin checks). */
  fundsOf: typeof fundsOf
  /** `fundsOf` as a read to send with the caller's own in one round trip (Queryable.readAll). */
  fundsRead: typeof fundsRead
  /** The group of each login. */
  groupIdsOf: typeof groupIdsOf
  /** The logins of a brand's group, read in the caller's transaction (by accounts_brand_group). */
  loginsOfGroup: typeof loginsOfGroup
}

export const AccountsPort = definePort<AccountsApi>('accounts')

/** Extension point: the exposure of open positions, which the trading module provides. */
export const ExposurePort = definePort<ExposureSource>('accounts.exposure')

/**
 * Extension point: the symbols of an account's open positions and pending orders that a group could not
 * price and trade (the trading module provides it); a group move to such a group is refused (409).
 */
export const GroupFitPort = definePort<UnfitSymbols>('accounts.group-fit')

/**
 * Extension point: a module whose accounts hold money that is not their customer's to move (prop's
 * challenge accounts hold the firm's capital) says why, or null; the cashier refuses deposits and
 * withdrawals on such an account, and nothing takes a fee from it.
 */
export const ManagedFundsPort = definePort<ManagedFunds>('accounts.managed-funds')

/**
 * Extension point: a module that names groups (prop's program steps) says why a group may not be renamed,
 * or null, read in the rename's transaction; a rename of such a group is refused (409 GROUP_IN_USE).
 */
export const GroupNamesPort = definePort<GroupNameUse>('accounts.group-names')

/**
 * Extension point: whether the deployment can convert an account currency (market provides it from its
 * symbols); a group in a currency nothing converts is refused (400 INVALID_DATA naming currency).
 */
export const CurrencyUsePort = definePort<CurrencyUse>('accounts.currency-use')

const NO_POSITIONS = { floatingProfit: 0, margin: 0, commission: 0, storage: 0 }

/** Groups, accounts, customers and the ledger (README.md of this folder). */
export const accountsModule = defineModule({
  name: 'accounts',
  tags: [
    { name: 'Account', description: 'Profile and balance of trading accounts' },
    { name: 'Manager', description: 'Back-office routes for manager, admin and dealer sessions' },
  ],
  env: AccountsEnv,
  tables: schema,
  setup(k, ports) {
    const ctx: AccountsCtx = {
      ...k,
      settings: accountsConfig(k.config),
      accountsRead: new AccountReadModel(k.db, k.store),
      uploads: ports.get(UploadsPort),
      // trading is set up later; without it there are no positions
      exposure: (account, group, q) =>
        ports.has(ExposurePort) ? ports.get(ExposurePort)(account, group, q) : Promise.resolve(NO_POSITIONS),
      unfitSymbols: (q, login, groupId) =>
        ports.has(GroupFitPort) ? ports.get(GroupFitPort)(q, login, groupId) : Promise.resolve([]),
      managedFunds: (login) =>
        ports.has(ManagedFundsPort) ? ports.get(ManagedFundsPort)(login) : Promise.resolve(null),
      groupNameUse: (q, brandId, name) =>
        ports.has(GroupNamesPort) ? ports.get(GroupNamesPort)(q, brandId, name) : Promise.resolve(null),
      currencyUse: (currency) =>
        ports.has(CurrencyUsePort) ? ports.get(CurrencyUsePort)(currency) : Promise.resolve(null),
    }
    ports.provide(AccountsPort, {
      read: ctx.accountsRead,
      loadAccountView: (brand, session, login) => loadAccountView({ ctx, brand, session, login }),
      loadAccountViewAs: (brand, session, login, notFound) =>
        loadAccountViewAs({ ctx, brand, session, login, notFound }),
      requireMargin: (view) => requireMargin({ ctx, input: view }),
      marginIn: (q, login) => marginIn(ctx, q, login),
      postTradeResultsTx,
      postOperationTx: (tx, work, input) => postOperationTx(ctx, tx, work, input),
      transferTx: (tx, work, input) => transferTx(ctx, tx, work, input),
      async setReadOnlyTx(tx, work, brandId, login, reason) {
        await tx
          .update(schema.accounts)
          .set({ enableReadOnly: 1, readOnlyReason: reason, updateTime: epochSeconds(ctx.clock.now()) })
          .where(and(eq(schema.accounts.login, login), eq(schema.accounts.brandId, brandId)))
        work.after(`account:${login}`, () => ctx.accountsRead.invalidateAccount(login))
      },
      openAccount: (input) => openAccount(ctx, input),
      operationAmount: async (brandId, login, id) => {
        const o = schema.balanceOperations
        const [row] = await ctx.db
          .select({ amount: o.amount })
          .from(o)
          .where(and(eq(o.id, id), eq(o.login, login), eq(o.brandId, brandId)))
        return row?.amount ?? null
      },
      findGroup: async (brandId, name, q = ctx.db) =>
        (
          await q
            .select()
            .from(schema.groups)
            .where(and(eq(schema.groups.brandId, brandId), eq(schema.groups.name, name)))
        )[0] ?? null,
      accountCredentials: (brandId, login) => accountCredentials(ctx, brandId, login),
      customerByEmail: (brandId, email) => customerByEmail(ctx, brandId, email),
      customerAccounts: (brandId, customerId) => customerAccounts(ctx, brandId, customerId),
      customerView,
      createCustomer: (c) => createCustomer(ctx, c),
      setPasswordHash: (brandId, login, hash) => setPasswordHash(ctx, brandId, login, hash),
      endSessions: (brandId, who) => endSessions(ctx, brandId, who),
      upgradePasswordHash: (who, from, to) => upgradePasswordHash(ctx, who, from, to),
      managedFunds: ctx.managedFunds,
      fundsOf,
      fundsRead,
      groupIdsOf,
      loginsOfGroup,
    })
    return {
      routes: new Elysia({ name: 'accounts', seed: k.instanceId })
        .use(accountRoutes(ctx))
        .use(accountManagerRoutes(ctx)),
      seedDemo: () => seedDemoAccounts(ctx),
      jobs: [
        // prevbalance and prevmonthbalance: each brand's day (month) closed once it has ended, read from
        // the ledger as of its end, so a run late or twice writes the same values
        {
          name: 'accounts.day-close',
          every: 60_000,
          scope: 'cluster',
          run: ({ now }) => closeDays(ctx, now),
        },
      ],
    }
  },
})

export { accountManagerRoutes } from './manager-routes'
// its routes, for the type of the whole API (src/main/app-type.ts: Eden treaty)
export { accountRoutes } from './routes'
