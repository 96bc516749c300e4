import { sql } from 'drizzle-orm'
import { index, integer, primaryKey, sqliteTable, text } from 'drizzle-orm/sqlite-core'

/**
 * Transactional outbox: an event is written in the transaction of the change it describes, and delivered
 * to each consumer of its topic by the relay (kernel/events/relay.ts). An event no consumer subscribes to
 * is written delivered. Delivered rows are deleted after the retention period.
 */
export const outbox = sqliteTable(
  'outbox',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    brandId: integer('brand_id').notNull(),
    topic: text('topic').notNull(),
    payload: text('payload').notNull(),
    createdAt: integer('created_at').notNull(),
    /** When every consumer had it (delivered or parked); null while some still wait. */
    dispatchedAt: integer('dispatched_at'),
    /** The relay instance holding it, until when (epoch ms): another relay takes it only after. */
    leaseOwner: text('lease_owner'),
    leaseUntil: integer('lease_until'),
    attempts: integer('attempts').notNull().default(0),
    /** Not before (epoch ms): the backoff after a failed attempt. */
    nextAt: integer('next_at').notNull().default(0),
  },
  // only undelivered rows are indexed: an event written delivered costs no index entry
  (t) => [index('outbox_undelivered').on(t.id).where(sql`dispatched_at is null`)],
)

/** One row per (event, consumer) that has had it: `delivered`, or `dead` when parked. */
export const eventDeliveries = sqliteTable(
  'event_deliveries',
  {
    eventId: integer('event_id').notNull(),
    consumer: text('consumer').notNull(),
    status: text('status', { enum: ['delivered', 'dead'] }).notNull(),
    at: integer('at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.eventId, t.consumer] })],
)

/** Events a consumer kept failing on, for staff to see and retry (GET /manager/events/dead-letters). */
export const deadLetters = sqliteTable(
  'dead_letters',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    eventId: integer('event_id').notNull(),
    consumer: text('consumer').notNull(),
    brandId: integer('brand_id').notNull(),
    topic: text('topic').notNull(),
    payload: text('payload').notNull(),
    error: text('error').notNull(),
    attempts: integer('attempts').notNull(),
    failedAt: integer('failed_at').notNull(),
    /** When staff sent it back to the relay; null while parked. */
    retriedAt: integer('retried_at'),
  },
  // parked ones by consumer and topic: what undeliveredEvents(parked) reads, inside a consumer's
  // transaction, from a table never deleted from; only rows still parked are indexed
  (t) => [
    index('dead_letters_brand').on(t.brandId, t.id),
    index('dead_letters_parked').on(t.consumer, t.topic).where(sql`retried_at is null`),
  ],
)
