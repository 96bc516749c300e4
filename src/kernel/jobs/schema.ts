import { integer, sqliteTable, text } from 'drizzle-orm/sqlite-core'

/** Job leases when no shared cache (Redis) is configured: who runs a cluster job, until when. */
export const jobLeases = sqliteTable('job_leases', {
  name: text('name').primaryKey(),
  owner: text('owner').notNull(),
  /** Epoch ms. */
  until: integer('until').notNull(),
})
