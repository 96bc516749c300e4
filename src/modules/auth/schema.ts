import { integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'

/** Staff of a brand (manager, admin, dealer); customers and accounts are the accounts module's. */

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
