import { integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'

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

export const staff = sqliteTable(
  'staff',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    brandId: integer('brand_id').notNull(),
    login: integer('login').notNull(),
    role: text('role', { enum: ['MANAGER', 'ADMIN', 'DEALER'] }).notNull(),
    name: text('name').notNull().default(''),
    passwordHash: text('password_hash').notNull(),
    enabled: integer('enabled').notNull().default(1),
    /** Bumped by a disable, a role or a password change: tokens issued under an older epoch stop working. */
    sessionEpoch: integer('session_epoch').notNull().default(0),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [uniqueIndex('staff_brand_login').on(t.brandId, t.login)],
)
