import { Elysia, t } from 'elysia'
import { doc, errors } from '../../kernel/http/openapi'
import { EpochSeconds, Id, Int, Login, nameModels, Ok, textInput } from '../../kernel/http/schemas'
import { security } from '../../kernel/http/security'
import { MAX_PRICE } from '../../kernel/limits'
import { CONDITION_DOC, REPEAT_REST_S } from './domain/conditions'
import type { AlertsServices } from './service'
import {
  createAlert,
  deleteAlert,
  listAlerts,
  MAX_ACTIVE_ALERTS,
  MAX_STORED_ALERTS,
  updateAlert,
} from './service'

const ANY = {
  roles: ['SESSION_USER', 'SESSION_CUSTOMER', 'SESSION_MANAGER', 'SESSION_ADMIN', 'SESSION_DEALER'] as const,
}
const price = (description: string) => t.Number({ exclusiveMinimum: 0, maximum: MAX_PRICE, description })

const fields = {
  login: Login,
  symbol: t.String({
    minLength: 1,
    maxLength: 32,
    pattern: '^[A-Za-z0-9._#-]+$',
    description: 'symbol name visible to the account group, e.g. EURUSD',
  }),
  indicator_name: t.Optional(t.String({ maxLength: 64, description: 'display name or source label' })),
  message: t.Optional(t.String({ maxLength: 500, description: 'custom text added to the notification' })),
  side: Int({ minimum: 0, maximum: 1, description: 'price source: 0 bid, 1 ask' }),
  condition: Int({ minimum: 0, maximum: 10, description: CONDITION_DOC }),
  target_price: t.Optional(price('level of conditions 0-4')),
  channel_low: t.Optional(price('lower bound of conditions 5-6')),
  channel_high: t.Optional(price('upper bound of conditions 5-6')),
  move_threshold: t.Optional(
    t.Number({ maximum: MAX_PRICE, description: 'conditions 7-10: percent or price amount; > 0' }),
  ),
  repeat_mode: t.Optional(
    Int({
      minimum: 0,
      maximum: 1,
      description: `0 once (the alert is disabled after firing), 1 repeat (re-armed after the condition resets; fires at most once in ${REPEAT_REST_S} s)`,
    }),
  ),
  expires_at: t.Optional(EpochSeconds('when the alert is disabled; 0 none')),
  reference_price: t.Optional(
    price('conditions 7-10: the price a move is measured from; default the current price'),
  ),
  reference_time: t.Optional(EpochSeconds('conditions 7-10: when reference_price was taken; default now')),
}
const EXAMPLE = {
  login: 100001,
  symbol: 'EURUSD',
  side: 0,
  condition: 0,
  target_price: 1.25,
  message: 'EURUSD at 1.25',
}

const Alert = t.Object(
  {
    id: Int(),
    login: Int(),
    symbol: t.String(),
    indicator_name: t.String(),
    message: t.String(),
    side: Int(),
    condition: Int(),
    target_price: t.Number(),
    channel_low: t.Number(),
    channel_high: t.Number(),
    move_threshold: t.Number(),
    repeat_mode: Int(),
    expires_at: Int(),
    reference_price: t.Number(),
    reference_time: Int(),
    active: Int({ description: '1 active; 0 fired (once), expired or disabled' }),
    fired_count: Int(),
    last_fired_at: Int({ description: 'epoch seconds; 0 never' }),
    last_price: t.Number({ description: 'price of the last firing' }),
    created_time: Int(),
  },
  { title: 'PriceAlert' },
)
const Saved = t.Object({ id: Int(), alert: Alert })
const IdParam = { id: Id('alert id (GET /price_alerts)') }
const NOT_FOUND = { 404: ['ALERT_NOT_FOUND'] } as const
/** A login the session may not see answers 403 USER_NOT_FOUND (spec 4.5 lists 400, 401, 403, 500). */
const OWN_LOGIN = { 403: ['USER_NOT_FOUND'], 404: ['GROUP_NOT_FOUND'] } as const

export const alertRoutes = (ctx: AlertsServices) =>
  new Elysia({ name: 'alert-routes', seed: ctx.instanceId })
    .use(security(ctx))
    .post('/price_alert', ({ brand, session, body }) => createAlert(ctx, brand, session, body), {
      auth: ANY,
      body: t.Object(fields, { example: EXAMPLE }),
      response: {
        200: Saved,
        ...errors({
          400: ['ALERT_LIMIT_REACHED'],
          403: ['ACCOUNT_DISABLED', 'USER_NOT_FOUND'],
          404: ['GROUP_NOT_FOUND'],
        }),
      },
      detail: doc('Price alerts', 'Create a price alert', {
        description:
          `Conditions: ${CONDITION_DOC}. target_price only for conditions 0-4; channel_low < channel_high for 5-6; ` +
          'move_threshold > 0 for 7-10, measured from reference_price (default: the current price; a level no ' +
          `price can reach, below one point or above ${MAX_PRICE}, is refused naming move_threshold; reference_price and reference_time are kept for 7-10 only). ` +
          "Prices are rounded to the symbol's digits, as order prices are; one that rounds to 0, or channel bounds that round to one price, are refused. 400 INVALID_DATA " +
          "otherwise. Evaluated on every tick of the symbol on the chosen side, at the account group's price (its spread settings; not while the symbol is hidden from the group). A firing writes a " +
          `notification (token alert.fired). A repeat alert fires again once the condition has reset, and at most once in ${REPEAT_REST_S} s: a firing due within that rest is not lost, it comes when the rest ends if the condition still holds. ` +
          `At most ${MAX_ACTIVE_ALERTS} active alerts per login, and ${MAX_STORED_ALERTS} stored (fired and disabled ones included): ` +
          "400 ALERT_LIMIT_REACHED. The login must be the session's (own login, a customer's own account, staff in the brand): 403 USER_NOT_FOUND otherwise. " +
          '403 ACCOUNT_DISABLED on an account staff disabled: its alerts are kept but do not fire until it is enabled again.',
      }),
    })
    .get('/price_alerts', ({ brand, session, query }) => listAlerts(ctx, brand, session, query.login), {
      auth: ANY,
      ...textInput({ query: { login: Login } }),
      response: {
        200: t.Object({ rows: t.Array(Alert) }),
        ...errors(OWN_LOGIN),
      },
      detail: doc('Price alerts', 'Alerts of a login, active and past', {
        description: `Oldest first; at most ${MAX_STORED_ALERTS} (the limit of stored alerts per login). 403 USER_NOT_FOUND: the login is not the session's.`,
      }),
    })
    .put(
      '/price_alert/:id',
      ({ brand, session, params, body }) => updateAlert(ctx, brand, session, params.id, body),
      {
        auth: ANY,
        ...textInput({ params: IdParam }),
        body: t.Object(
          {
            ...fields,
            active: t.Optional(Int({ minimum: 0, maximum: 1, description: 'default 1; 0 disables' })),
          },
          { example: { ...EXAMPLE, active: 1 } },
        ),
        response: {
          200: Saved,
          ...errors({
            400: ['ALERT_LIMIT_REACHED'],
            403: ['ACCOUNT_DISABLED', 'USER_NOT_FOUND'],
            404: ['ALERT_NOT_FOUND', 'GROUP_NOT_FOUND'],
            409: ['ALERT_CHANGED'],
          }),
        },
        detail: doc('Price alerts', 'Replace an alert', {
          description:
            'Same rules as creation. A change of what the alert watches (symbol, side, condition, levels, ' +
            'reference price) re-arms it from the current price, as does activating an inactive alert (active 1 ' +
            'after it fired once, expired or was disabled); another change (message, expiry, repeat mode) keeps ' +
            'its state (a repeat alert still waits for its reset), after a restart too. 404 ALERT_NOT_FOUND. On a ' +
            'disabled account only active 0 (disabling the alert) is taken: 403 ACCOUNT_DISABLED otherwise. ' +
            'active 0 with what the alert watches sent back as stored (for moving conditions reference_price ' +
            'and reference_time too) is taken even while its symbol is hidden from the group. ' +
            'The edit applies to the alert as it is when written: one that fired meanwhile (a once-alert, now ' +
            'inactive) is activated again only within the active limit (400 ALERT_LIMIT_REACHED); 409 ' +
            'ALERT_CHANGED if other writes kept changing it (read it again and retry).',
        }),
      },
    )
    .delete('/price_alert/:id', ({ brand, session, params }) => deleteAlert(ctx, brand, session, params.id), {
      auth: ANY,
      ...textInput({ params: IdParam }),
      response: { 200: Ok, ...errors(NOT_FOUND) },
      detail: doc('Price alerts', 'Delete an alert', { description: '404 ALERT_NOT_FOUND.' }),
    })

nameModels({ PriceAlert: Alert })
