import { index, integer, sqliteTable, text } from 'drizzle-orm/sqlite-core'

/** User scripts (spec 2.6): source text kept for a login; the server stores every script as private. */
export const scripts = sqliteTable(
  'scripts',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    brandId: integer('brand_id').notNull(),
    login: integer('login').notNull(),
    name: text('name').notNull(),
    script: text('script').notNull(),
    type: text('type').notNull().default('private'),
    autostart: integer('autostart').notNull().default(0),
    createdAt: integer('created_at').notNull(),
    updatedAt: integer('updated_at').notNull(),
  },
  (t) => [index('scripts_login').on(t.login, t.id)],
)
