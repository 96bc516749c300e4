import { index, integer, sqliteTable, text } from 'drizzle-orm/sqlite-core'

/**
 * What staff did (docs/adr/0027): one row per change a staff session asked for (and per opening of a
 * document that opts in), written before the change runs, its outcome written once the answer is known;
 * price batches are written after, in groups. Kept: nothing deletes it.
 */
export const staffActions = sqliteTable(
  'staff_actions',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    brandId: integer('brand_id').notNull(),
    staffId: integer('staff_id').notNull(),
    staffLogin: integer('staff_login'),
    /** MANAGER, ADMIN or DEALER: the session's role when it acted. */
    role: text('role').notNull(),
    /** Epoch ms, when the request was taken. */
    at: integer('at').notNull(),
    method: text('method').notNull(),
    /** The route's template (`/manager/events/dead-letters/:id/retry`): what filters find. */
    route: text('route').notNull(),
    /** The path and query as sent, secret-named query values redacted. */
    path: text('path').notNull(),
    /** The request body as JSON, secret-named fields redacted, cut at 8 KiB; null without one. */
    body: text('body'),
    requestId: text('request_id').notNull(),
    /** The request's Idempotency-Key header, when it sent one (a repeat of a change carries the same). */
    idempotencyKey: text('idempotency_key'),
    /** 1 when the answer was a replay of an earlier answer under that key: nothing was changed again. */
    replayed: integer('replayed').notNull().default(0),
    /** The answer's status; null until it is known (a process that stopped mid-request leaves it so). */
    status: integer('status'),
    code: text('code'),
  },
  (t) => [
    index('staff_actions_brand').on(t.brandId, t.id),
    index('staff_actions_staff').on(t.brandId, t.staffId, t.id),
    index('staff_actions_route').on(t.brandId, t.route, t.id),
    index('staff_actions_time').on(t.brandId, t.at),
  ],
)
