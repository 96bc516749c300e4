import { Elysia, t } from 'elysia'
import { doc, errors } from '../../kernel/http/openapi'
import { Id, Int, OneOf, textInput } from '../../kernel/http/schemas'
import { security } from '../../kernel/http/security'
import type { NotificationsCtx } from './context'
import {
  NOTIFICATION_LEVELS,
  NOTIFICATION_TOKENS,
  NOTIFICATION_TYPES,
  STRUCTURE,
} from './domain/notification'
import { listNotifications, markRead, sendNotification } from './service'

const USER_ONLY = { roles: ['SESSION_USER'] as const }
const STAFF_WRITERS = { roles: ['SESSION_MANAGER', 'SESSION_ADMIN'] as const }

const Message = t.Object({ title: t.String(), body: t.String() }, { title: 'NotificationMessage' })
const Row = t.Tuple(
  [
    Int({ description: 'id' }),
    t.String({ description: `token: ${Object.keys(NOTIFICATION_TOKENS).join(', ')}` }),
    Message,
    Int({ description: 'create_time, epoch seconds' }),
    Int({ description: 'open_time: when read, epoch seconds; 0 unread' }),
    t.String({ description: `type: ${NOTIFICATION_TYPES.join(', ')}` }),
    Int({ description: 'status: 0 unread, 1 read' }),
    t.String({ description: `level: ${NOTIFICATION_LEVELS.join(', ')}` }),
    t.Record(t.String(), t.Unknown(), { description: 'description' }),
    t.Record(t.String(), t.Unknown(), { description: 'data (e.g. ticket, symbol, price, alert id)' }),
  ],
  { title: 'NotificationRow' },
)

export const notificationRoutes = (ctx: NotificationsCtx) =>
  new Elysia({ name: 'notification-routes', seed: ctx.instanceId })
    .use(security(ctx))
    .get(
      '/notify/list',
      ({ brand, session, query }) =>
        listNotifications(ctx, brand, session, {
          limit: query.limit ?? 50,
          offset: query.offset ?? 0,
          filter: query.filter ?? '',
        }),
      {
        auth: USER_ONLY,
        ...textInput({
          query: {
            limit: t.Optional(
              Int({
                minimum: 1,
                maximum: 500,
                description: 'rows to return (1..500), default 50',
                default: 50,
                example: 50,
              }),
            ),
            offset: t.Optional(
              Int({
                minimum: 0,
                maximum: 1_000_000,
                description: 'rows to skip, default 0',
                default: 0,
                example: 0,
              }),
            ),
            filter: t.Optional(
              t.String({
                maxLength: 128,
                description:
                  'text matched literally in the message title or body (case-insensitive for ASCII letters); absent or empty: all',
                example: 'alert',
              }),
            ),
          },
        }),
        response: {
          200: t.Object({
            structure: t.Array(t.String(), { description: `always ${STRUCTURE.join(', ')}` }),
            rows: t.Array(Row),
          }),
          ...errors(),
        },
        detail: doc('Notifications', "Notifications of the session's login, newest first", {
          description:
            'Account sessions only. Rows are arrays in the order of `structure`. Only rows addressed to the ' +
            'login are listed; broadcasts (user id 0) never are. Tokens: order.activated, order.sl, order.tp, ' +
            'order.expired, order.cancelled (type trade); margin.call, margin.stop_out (type margin); alert.fired (type alert); ' +
            'staff.message (type system). Levels: info, warning, critical.',
        }),
      },
    )
    .put('/notify/read', ({ brand, session, body }) => markRead(ctx, brand, session, body), {
      auth: USER_ONLY,
      body: t.Object(
        {
          ids: t.Optional(
            t.Array(Id('notification id'), {
              maxItems: 500,
              description: 'ids of notifications to mark read',
            }),
          ),
          all: t.Optional(t.Boolean({ description: 'true marks every notification of the login read' })),
        },
        { example: { all: true } },
      ),
      response: { 200: t.Object({ data: t.Literal('OK'), updated: Int() }), ...errors() },
      detail: doc('Notifications', 'Mark notifications read', {
        description:
          'The given ids of the login, or all of them with `all: true`; sets status 1 and open_time.',
      }),
    })
    .post('/manager/notify', ({ brand, body }) => sendNotification(ctx, brand, body), {
      auth: STAFF_WRITERS,
      body: t.Object(
        {
          login: Int({
            minimum: 0,
            description: 'account login of the brand; 0 for a broadcast',
            example: 100001,
          }),
          title: t.String({ minLength: 1, maxLength: 120, description: 'headline' }),
          body: t.String({ minLength: 1, maxLength: 2000, description: 'message text' }),
          level: t.Optional(OneOf(NOTIFICATION_LEVELS, { description: 'default info' })),
        },
        { example: { login: 100001, title: 'Welcome', body: 'Your account is ready.', level: 'info' } },
      ),
      response: { 200: t.Object({ id: Int() }), ...errors({ 404: ['ACCOUNT_NOT_FOUND'] }) },
      detail: doc('Notifications', 'Send a notification to a login or broadcast it (staff)', {
        description: 'token staff.message, type system. 404 ACCOUNT_NOT_FOUND for a login outside the brand.',
      }),
    })
