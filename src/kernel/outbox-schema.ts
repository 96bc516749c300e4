import { index, integer, sqliteTable, text } from 'drizzle-orm/sqlite-core'

/** Transactional outbox: events are written in the transaction that caused them, delivered after commit. */
export const outbox = sqliteTable(
  'outbox',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    brandId: integer('brand_id').notNull(),
    topic: text('topic').notNull(),
    payload: text('payload').notNull(),
    createdAt: integer('created_at').notNull(),
    dispatchedAt: integer('dispatched_at'),
  },
  (t) => [index('outbox_pending').on(t.dispatchedAt, t.id)],
)
