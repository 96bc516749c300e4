import { and, desc, eq, gte, lt, lte } from 'drizzle-orm'
import { Elysia, t } from 'elysia'
import { invalid } from '../http/errors'
import { doc, errors } from '../http/openapi'
import {
  EpochSeconds,
  Id,
  IdPageQuery,
  Int,
  idPage,
  jsonOrText,
  nameModels,
  textInput,
} from '../http/schemas'
import { security } from '../http/security'
import type { Kernel } from '../kernel'
import { staffActions } from './schema'

const StaffAction = t.Object({
  id: Int(),
  time: Int({ description: 'when the request was taken, epoch ms' }),
  staff_id: Int(),
  staff_login: t.Union([Int(), t.Null()]),
  role: t.String({ description: 'MANAGER, ADMIN or DEALER' }),
  method: t.String(),
  route: t.String({ description: 'the route template, e.g. /manager/events/dead-letters/:id/retry' }),
  path: t.String({ description: 'path and query as sent; secret-named query values [redacted]' }),
  body: t.Unknown({
    description:
      'the request body (null without one): passwords, tokens, keys and one-time codes [redacted], files named by name and size; text past 8 KiB is cut and kept as text',
  }),
  status: t.Union([Int(), t.Null()], {
    description:
      "the answer's status; null when the outcome was never recorded (the process stopped mid-request)",
  }),
  code: t.Union([t.String(), t.Null()], { description: 'the error code of a refused request' }),
  request_id: t.String({ description: "the request's X-Request-Id (its log line)" }),
  idempotency_key: t.Union([t.String(), t.Null()], {
    description: 'the Idempotency-Key header the request sent: repeats of one change carry the same',
  }),
  replayed: t.Boolean({
    description:
      'true when the answer was the replay of an earlier one under that key: nothing was done again',
  }),
})

/** The staff audit trail, for a brand's admins (kernel/audit). */
export const auditRoutes = (k: Kernel) =>
  new Elysia({ name: 'audit-routes', seed: k.instanceId }).use(security(k)).get(
    '/manager/audit',
    async ({ brand, query }) => {
      if (query.from !== undefined && query.to !== undefined && query.to < query.from)
        throw invalid('query to: before from')
      const limit = query.limit ?? 100
      const rows = await k.db
        .select()
        .from(staffActions)
        .where(
          and(
            eq(staffActions.brandId, brand.id),
            query.staff_id === undefined ? undefined : eq(staffActions.staffId, query.staff_id),
            query.route === undefined ? undefined : eq(staffActions.route, query.route),
            query.from === undefined ? undefined : gte(staffActions.at, query.from * 1000),
            query.to === undefined ? undefined : lte(staffActions.at, query.to * 1000 + 999),
            query.cursor === undefined ? undefined : lt(staffActions.id, query.cursor),
          ),
        )
        .orderBy(desc(staffActions.id))
        .limit(limit + 1)
      const { page, next_cursor } = idPage(rows, limit)
      return {
        rows: page.map((r) => ({
          id: r.id,
          time: r.at,
          staff_id: r.staffId,
          staff_login: r.staffLogin,
          role: r.role,
          method: r.method,
          route: r.route,
          path: r.path,
          // a body cut at its bound stays text
          body: r.body === null ? null : jsonOrText(r.body),
          status: r.status,
          code: r.code,
          request_id: r.requestId,
          idempotency_key: r.idempotencyKey,
          replayed: r.replayed === 1,
        })),
        next_cursor,
      }
    },
    {
      auth: { roles: ['SESSION_ADMIN'] },
      ...textInput({
        query: {
          staff_id: t.Optional(Id('only the actions of this staff member')),
          route: t.Optional(
            t.String({
              minLength: 1,
              maxLength: 200,
              description: 'only this route template (as the rows name it)',
              example: '/manager/events/dead-letters/:id/retry',
            }),
          ),
          from: t.Optional(EpochSeconds('only actions taken at or after')),
          to: t.Optional(EpochSeconds('only actions taken at or before')),
          ...IdPageQuery,
        },
      }),
      response: {
        200: t.Object({ rows: t.Array(StaffAction), next_cursor: t.Union([Int(), t.Null()]) }),
        ...errors(),
      },
      detail: doc('System', "What the brand's staff did (the audit trail), newest first (admin)", {
        description:
          'One row per change a staff session (manager, admin, dealer) asked for, on every route, and per read of a route ' +
          "that says it is recorded (a customer's identity document opened). The row is written before the change runs: " +
          'a change is never made without it (when it cannot be written the request answers 503 and nothing is done); ' +
          'its status and code once answered. Price batches, many a second, are written once answered, in groups, within a ' +
          'second. Not recorded: other reads and sign-ins. Passwords, tokens, keys and one-time codes are [redacted]. ' +
          'Kept without end. A page at a time: `limit`, then `cursor` = the last next_cursor.',
      }),
    },
  )

nameModels({ StaffAction })
