import { index, integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'

export const groups = sqliteTable(
  'groups',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    brandId: integer('brand_id').notNull(),
    name: text('name').notNull(),
    accountMode: text('account_mode', { enum: ['REAL', 'DEMO'] }).notNull(),
    currency: text('currency').notNull(),
    leverage: integer('leverage').notNull(),
    /** Minor units of the group currency; credited to new DEMO accounts. */
    defaultDeposit: integer('default_deposit').notNull().default(0),
    marginCall: integer('margin_call').notNull().default(100),
    stopOut: integer('stop_out').notNull().default(50),
    /** 0: customers cannot open accounts in it themselves (prop phases' groups; staff and modules can). */
    selfService: integer('self_service').notNull().default(1),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [uniqueIndex('groups_brand_name').on(t.brandId, t.name)],
)

export const accounts = sqliteTable(
  'accounts',
  {
    login: integer('login').primaryKey(),
    brandId: integer('brand_id').notNull(),
    customerId: integer('customer_id'),
    /** No foreign key on purpose: an account whose group is gone answers GROUP_NOT_FOUND. */
    groupId: integer('group_id').notNull(),
    passwordHash: text('password_hash').notNull(),
    enable: integer('enable').notNull().default(1),
    enableReadOnly: integer('enable_read_only').notNull().default(0),
    enableChangePassword: integer('enable_change_password').notNull().default(1),
    leverage: integer('leverage').notNull(),
    name: text('name').notNull().default(''),
    email: text('email').notNull().default(''),
    phone: text('phone').notNull().default(''),
    address: text('address').notNull().default(''),
    city: text('city').notNull().default(''),
    state: text('state').notNull().default(''),
    country: text('country').notNull().default(''),
    zipcode: text('zipcode').notNull().default(''),
    comment: text('comment').notNull().default(''),
    avatar: text('avatar').notNull().default(''),
    userColor: text('user_color').notNull().default(''),
    /** Ledger totals in minor units, kept equal to the sum of balance_operations in the same transaction. */
    balance: integer('balance').notNull().default(0),
    credit: integer('credit').notNull().default(0),
    prevBalance: integer('prev_balance').notNull().default(0),
    prevMonthBalance: integer('prev_month_balance').notNull().default(0),
    regdate: integer('regdate').notNull(),
    updateTime: integer('update_time').notNull(),
    /** Bumped by a disable or a password change: tokens issued under an older epoch stop working. */
    sessionEpoch: integer('session_epoch').notNull().default(0),
    /** 1: the password was generated (a prop challenge's): the account must set its own before acting. */
    mustChangePassword: integer('must_change_password').notNull().default(0),
    /** Why the account is read-only, when a module made it so (shown in trade refusals). */
    readOnlyReason: text('read_only_reason').notNull().default(''),
    /**
     * Open positions and pending orders the account may hold together; 0: no limit. A module sets it where
     * its rules say so (a prop phase's max_positions); trading enforces it in the open's write transaction.
     */
    maxPositions: integer('max_positions').notNull().default(0),
  },
  (t) => [
    index('accounts_brand_customer').on(t.brandId, t.customerId),
    /** A group's accounts (market's hide check reads its holders; accounts' group checks). */
    index('accounts_brand_group').on(t.brandId, t.groupId),
  ],
)

/** The ledger. One row per balance or credit movement; never updated, never deleted. */
export const balanceOperations = sqliteTable(
  'balance_operations',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    brandId: integer('brand_id').notNull(),
    login: integer('login').notNull(),
    op: text('op', {
      enum: ['OP_BALANCE_IN', 'OP_BALANCE_OUT', 'OP_CREDIT_IN', 'OP_CREDIT_OUT', 'OP_TRADE'],
    }).notNull(),
    /** Closed trade ticket for OP_TRADE rows (profit + swap + commission of that close). */
    ticket: integer('ticket'),
    /** Signed minor units: negative for *_OUT. */
    amount: integer('amount').notNull(),
    balanceAfter: integer('balance_after').notNull(),
    creditAfter: integer('credit_after').notNull(),
    reason: text('reason').notNull(),
    comment: text('comment').notNull().default(''),
    apiData: text('api_data'),
    idempotencyKey: text('idempotency_key'),
    createdBy: text('created_by').notNull(),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [
    index('balance_operations_login').on(t.login, t.id),
    uniqueIndex('balance_operations_idem').on(t.login, t.idempotencyKey),
  ],
)

/** Customers: the owners of accounts (a CRM record); they sign in with email and password. */
export const customers = sqliteTable(
  'customers',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    brandId: integer('brand_id').notNull(),
    /** Stored lower-cased; unique per brand. */
    email: text('email').notNull(),
    passwordHash: text('password_hash').notNull(),
    name: text('name').notNull().default(''),
    phone: text('phone').notNull().default(''),
    country: text('country').notNull().default(''),
    depositAllowed: integer('deposit_allowed').notNull().default(1),
    withdrawalAllowed: integer('withdrawal_allowed').notNull().default(1),
    enabled: integer('enabled').notNull().default(1),
    /** Marketing attribution copied at registration (JSON); filled by the attribution module. */
    attribution: text('attribution'),
    /** Bumped by a disable or a password change: tokens issued under an older epoch stop working. */
    sessionEpoch: integer('session_epoch').notNull().default(0),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [uniqueIndex('customers_brand_email').on(t.brandId, t.email)],
)
