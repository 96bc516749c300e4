import { Elysia, t } from 'elysia'
import type { AppContext } from '../../context'
import { STAFF_SESSIONS } from '../../platform/auth/session'
import { doc, errors } from '../../platform/openapi'
import { Int, Password, textInput } from '../../platform/schemas'
import { security } from '../../platform/security'
import {
  changeAccountSettings,
  createGroup,
  listGroups,
  listOperations,
  updateGroup,
} from '../accounts/admin'
import { OPERATIONS, postBalanceOperation } from '../accounts/ledger'
import { openAccount } from '../accounts/open'
import { Profile } from '../accounts/routes'
import { loadAccountView, profileView, requireMargin } from '../accounts/service'

const ACCOUNT_ADMINS = { roles: ['SESSION_MANAGER', 'SESSION_ADMIN'] as const }
const ANY_STAFF = { roles: STAFF_SESSIONS }
const LoginParam = { login: Int({ minimum: 0 }) }
const Flag = Int({ minimum: 0, maximum: 1 })

const GroupIdParam = { id: Int({ minimum: 1 }) }
const GroupName = t.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9_\\\\-]+$' })
const Leverage = Int({ minimum: 1, maximum: 1000 })
const GroupSettings = {
  default_deposit: t.Optional(t.Number({ minimum: 0, description: 'credited to new DEMO accounts' })),
  margin_call: t.Optional(Int({ minimum: 1, maximum: 10_000, description: 'margin level (%)' })),
  stop_out: t.Optional(Int({ minimum: 0, maximum: 10_000, description: 'margin level (%)' })),
}

const Group = t.Object({
  id: Int(),
  name: t.String(),
  account_mode: t.Union([t.Literal('REAL'), t.Literal('DEMO')]),
  currency: t.String(),
  leverage: Int(),
  default_deposit: t.Number(),
  margin_call: Int({ description: 'margin level (%) of the margin call' }),
  stop_out: Int({ description: 'margin level (%) of the stop-out' }),
})

const Operation = t.Object({
  id: Int(),
  login: Int(),
  op: t.UnionEnum([...OPERATIONS, 'OP_TRADE'], { description: 'OP_TRADE: result of a closed trade' }),
  ticket: t.Union([Int(), t.Null()], { description: 'closed trade ticket of OP_TRADE rows' }),
  amount: t.Number({ description: 'signed, in the account currency' }),
  balance_after: t.Number(),
  credit_after: t.Number(),
  currency: t.String(),
  reason: t.String(),
  comment: t.String(),
  api_data: t.Union([t.Record(t.String(), t.Unknown()), t.Null()]),
  idempotency_key: t.Union([t.String(), t.Null()]),
  created_by: t.String(),
  created_time: Int(),
})

const ManagedAccount = t.Composite([Profile, t.Object({ customer_id: t.Union([Int(), t.Null()]) })])

const OP_BY_TYPE = {
  deposit: 'OP_BALANCE_IN',
  withdrawal: 'OP_BALANCE_OUT',
  credit_in: 'OP_CREDIT_IN',
  credit_out: 'OP_CREDIT_OUT',
} as const
const DEFAULT_REASON = {
  deposit: 'TR_REASON_DEPOSIT',
  withdrawal: 'TR_REASON_WITHDRAWAL',
  credit_in: 'TR_REASON_CREDIT',
  credit_out: 'TR_REASON_CREDIT',
} as const

export const managerRoutes = (ctx: AppContext) =>
  new Elysia({ name: 'manager-routes', seed: ctx.instanceId, prefix: '/manager' })
    .use(security(ctx))
    .get('/groups', ({ brand }) => listGroups(ctx, brand), {
      auth: ANY_STAFF,
      response: { 200: t.Object({ rows: t.Array(Group) }), ...errors(401, 403) },
      detail: doc('Manager', 'Groups of the brand'),
    })
    .post('/groups', ({ brand, body }) => createGroup(ctx, brand, body), {
      auth: ACCOUNT_ADMINS,
      body: t.Object({
        name: GroupName,
        account_mode: t.UnionEnum(['REAL', 'DEMO']),
        currency: t.String({ pattern: '^[A-Z]{3}$', description: 'ISO 4217 code of the account currency' }),
        leverage: Leverage,
        ...GroupSettings,
      }),
      response: { 200: Group, ...errors(400, 401, 403, 409) },
      detail: doc('Manager', 'Create a group of the brand', {
        description:
          'margin_call defaults to 100 and stop_out to 50 (margin levels in %); stop_out must be below margin_call. ' +
          'The group starts with no security settings: add them with PUT /manager/groups/{id}/securities/{sec_group}. ' +
          '409 GROUP_EXISTS for a name the brand already uses.',
      }),
    })
    .patch('/groups/:id', ({ brand, params, body }) => updateGroup(ctx, brand, params.id, body), {
      auth: ACCOUNT_ADMINS,
      ...textInput({ params: GroupIdParam }),
      body: t.Object(
        { name: t.Optional(GroupName), leverage: t.Optional(Leverage), ...GroupSettings },
        { minProperties: 1 },
      ),
      response: { 200: Group, ...errors(400, 401, 403, 404, 409) },
      detail: doc('Manager', 'Change name, leverage, demo deposit, margin call or stop-out of a group', {
        description:
          'Currency and account mode are fixed once accounts exist. 404 GROUP_NOT_FOUND outside the brand.',
      }),
    })
    .post(
      '/accounts',
      async ({ brand, session, body }) => {
        const { account } = await openAccount(ctx, {
          ...body,
          brandId: brand.id,
          customerId: body.customer_id ?? null,
          createdBy: `staff:${session.staffId}`,
        })
        const view = await loadAccountView(ctx, brand, session, account.login)
        return { ...profileView(view, await requireMargin(ctx, view)), customer_id: view.account.customerId }
      },
      {
        auth: ACCOUNT_ADMINS,
        body: t.Object({
          group: t.String({ minLength: 1, maxLength: 64 }),
          password: Password,
          leverage: t.Optional(Int({ minimum: 1, maximum: 1000 })),
          name: t.Optional(t.String({ maxLength: 128 })),
          email: t.Optional(t.String({ maxLength: 254 })),
          phone: t.Optional(t.String({ maxLength: 64 })),
          country: t.Optional(t.String({ maxLength: 128 })),
          city: t.Optional(t.String({ maxLength: 128 })),
          address: t.Optional(t.String({ maxLength: 256 })),
          zipcode: t.Optional(t.String({ maxLength: 32 })),
          comment: t.Optional(t.String({ maxLength: 256 })),
          customer_id: t.Optional(Int({ minimum: 1 })),
        }),
        response: { 200: ManagedAccount, ...errors(400, 401, 403, 404) },
        detail: doc('Manager', 'Create a trading account', {
          description: 'A DEMO group account receives the group default_deposit. 404 GROUP_NOT_FOUND.',
        }),
      },
    )
    .get(
      '/accounts/:login',
      async ({ brand, session, params }) => {
        const view = await loadAccountView(ctx, brand, session, params.login)
        return { ...profileView(view, await requireMargin(ctx, view)), customer_id: view.account.customerId }
      },
      {
        auth: ANY_STAFF,
        ...textInput({ params: LoginParam }),
        response: { 200: ManagedAccount, ...errors(400, 401, 403, 404) },
        detail: doc('Manager', 'Read an account of the brand'),
      },
    )
    .patch(
      '/accounts/:login',
      async ({ brand, session, params, body }) => {
        await changeAccountSettings(ctx, brand, params.login, body)
        const view = await loadAccountView(ctx, brand, session, params.login)
        return { ...profileView(view, await requireMargin(ctx, view)), customer_id: view.account.customerId }
      },
      {
        auth: ACCOUNT_ADMINS,
        ...textInput({ params: LoginParam }),
        body: t.Object(
          {
            group: t.Optional(t.String({ minLength: 1, maxLength: 64 })),
            leverage: t.Optional(Int({ minimum: 1, maximum: 1000 })),
            enable: t.Optional(Flag),
            enable_read_only: t.Optional(Flag),
            enable_change_password: t.Optional(Flag),
            comment: t.Optional(t.String({ maxLength: 256 })),
          },
          { minProperties: 1 },
        ),
        response: { 200: ManagedAccount, ...errors(400, 401, 403, 404) },
        detail: doc('Manager', 'Change group, leverage, enable flags or comment of an account'),
      },
    )
    .post(
      '/accounts/:login/balance',
      async ({ brand, session, params, body }) =>
        postBalanceOperation(ctx, {
          brandId: brand.id,
          login: params.login,
          op: OP_BY_TYPE[body.type],
          amount: body.amount,
          reason: body.reason ?? DEFAULT_REASON[body.type],
          comment: body.comment,
          apiData: body.api_data,
          idempotencyKey: body.idempotency_key,
          createdBy: `staff:${session.staffId}`,
        }),
      {
        auth: ACCOUNT_ADMINS,
        ...textInput({ params: LoginParam }),
        body: t.Object({
          type: t.Union([
            t.Literal('deposit'),
            t.Literal('withdrawal'),
            t.Literal('credit_in'),
            t.Literal('credit_out'),
          ]),
          amount: t.Number({ exclusiveMinimum: 0, description: 'positive, in the account currency' }),
          reason: t.Optional(t.String({ pattern: '^TR_REASON_[A-Z_]{1,40}$' })),
          comment: t.Optional(t.String({ maxLength: 256 })),
          api_data: t.Optional(t.Record(t.String(), t.Unknown())),
          idempotency_key: t.Optional(t.String({ minLength: 1, maxLength: 128 })),
        }),
        response: {
          200: t.Object({ operation: Operation, idempotent: t.Boolean() }),
          ...errors(400, 401, 403, 404),
        },
        detail: doc('Manager', 'Post a balance operation (deposit, withdrawal, credit in/out)', {
          description:
            'One ledger row per call. 400 NOT_ENOUGH_FUNDS when a withdrawal or credit-out would go below ' +
            'zero. A repeated idempotency_key returns the first operation with idempotent = true.',
        }),
      },
    )
    .get(
      '/accounts/:login/operations',
      ({ brand, params, query }) =>
        listOperations(ctx, brand, params.login, { cursor: query.cursor, limit: query.limit ?? 100 }),
      {
        auth: ANY_STAFF,
        ...textInput({
          params: LoginParam,
          query: {
            cursor: t.Optional(Int({ minimum: 1 })),
            limit: t.Optional(Int({ minimum: 1, maximum: 500 })),
          },
        }),
        response: {
          200: t.Object({
            rows: t.Array(Operation),
            has_more: t.Boolean(),
            next_cursor: t.Union([Int(), t.Null()]),
          }),
          ...errors(400, 401, 403, 404),
        },
        detail: doc('Manager', 'Ledger of an account, newest first (cursor pagination)'),
      },
    )
