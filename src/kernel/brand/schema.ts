import { integer, sqliteTable, text } from 'drizzle-orm/sqlite-core'

export const brands = sqliteTable('brands', {
  id: integer('id').primaryKey({ autoIncrement: true }),
  name: text('name').notNull().unique(),
  /** Hostname without scheme, port or path (spec 4.17). */
  affiliateHost: text('affiliate_host').notNull().unique(),
  createdAt: integer('created_at').notNull(),
})

/** The allowlist: a request is served for a brand only when its Host is listed here. */
export const brandHosts = sqliteTable('brand_hosts', {
  host: text('host').primaryKey(),
  brandId: integer('brand_id').notNull(),
})
