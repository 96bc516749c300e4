import { integer, sqliteTable, text } from 'drizzle-orm/sqlite-core'
import { BRAND_SITE } from './sites'

export const brands = sqliteTable('brands', {
  id: integer('id').primaryKey({ autoIncrement: true }),
  name: text('name').notNull().unique(),
  createdAt: integer('created_at').notNull(),
})

/**
 * The allowlist: a request is served for a brand only when its Host is listed here, and only by the
 * routes of the host's site: the brand's own (`brand`: its API and pages) or one a module declares.
 * A hostname without scheme, port or path; a host belongs to one brand and one site.
 */
export const brandHosts = sqliteTable('brand_hosts', {
  host: text('host').primaryKey(),
  brandId: integer('brand_id').notNull(),
  site: text('site').notNull().default(BRAND_SITE),
})
