import { index, integer, sqliteTable, text } from 'drizzle-orm/sqlite-core'

/**
 * Notifications of spec 2.10. `user_id` is the account login; 0 is a broadcast of the brand (kept for
 * staff tools, never listed by GET /notify/list). Values of token, type, status and level are defined in
 * domain/notification.ts and documented in OpenAPI.
 */
export const notifications = sqliteTable(
  'notifications',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    brandId: integer('brand_id').notNull(),
    userId: integer('user_id').notNull(),
    token: text('token').notNull(),
    /** JSON { title, body }. */
    message: text('message').notNull(),
    /** Epoch seconds. */
    createTime: integer('create_time').notNull(),
    /** Epoch seconds when the user marked it read; 0 unread. */
    openTime: integer('open_time').notNull().default(0),
    type: text('type').notNull(),
    status: integer('status').notNull().default(0),
    level: text('level').notNull(),
    /** JSON object. */
    description: text('description').notNull().default('{}'),
    /** JSON object. */
    data: text('data').notNull().default('{}'),
  },
  (t) => [index('notifications_user').on(t.brandId, t.userId, t.id)],
)
