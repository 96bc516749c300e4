import { Elysia, t } from 'elysia'
import { STAFF_SESSIONS } from '../../kernel/auth/session'
import { invalid } from '../../kernel/http/errors'
import { idempotencyKeyOf } from '../../kernel/http/idempotency'
import { doc, errors } from '../../kernel/http/openapi'
import { Id, Int, nameModels, Ok, OneOf, PasswordText, textInput } from '../../kernel/http/schemas'
import { security } from '../../kernel/http/security'
import { MAX_AMOUNT } from '../../kernel/limits'
import { createGroup, listGroups, listOperations, updateGroup } from './admin'
import type { AccountsCtx } from './context'
import { endSessions } from './customers'
import { refuse } from './errors'
import { OPERATIONS, postBalanceOperation } from './ledger'
import { changeManagedAccount, managedAccount, openManagedAccount } from './managed-accounts'
import { Profile } from './routes'
import { accountNotFound } from './service'

const ACCOUNT_ADMINS = { roles: ['SESSION_MANAGER', 'SESSION_ADMIN'] as const }
const ANY_STAFF = { roles: STAFF_SESSIONS }
const LoginParam = { login: Int({ minimum: 0, description: 'account login', example: 100001 }) }
const Flag = (description: string) => Int({ minimum: 0, maximum: 1, description })

const GroupIdParam = { id: Id('group id (GET /manager/groups)') }
const GroupName = t.String({
  minLength: 1,
  maxLength: 64,
  pattern: '^[A-Za-z0-9_\\\\-]+$',
  description: 'group name (letters, digits, _ - and backslash)',
})
const Leverage = Int({ minimum: 1, maximum: 1000, description: 'account leverage, 1:N' })
const GroupSettings = {
  default_deposit: t.Optional(
    t.Number({ minimum: 0, maximum: MAX_AMOUNT, description: 'balance credited to new DEMO accounts' }),
  ),
  margin_call: t.Optional(
    Int({ minimum: 1, maximum: 10_000, description: 'margin level (%) of the margin call' }),
  ),
  stop_out: t.Optional(Int({ minimum: 0, maximum: 10_000, description: 'margin level (%) of the stop-out' })),
  self_service: t.Optional(
    Flag('1 (default): customers may open accounts in it (GET /customer/groups); 0: staff and modules only'),
  ),
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
  self_service: Int({
    description: '1: customers may open accounts in it themselves; 0: staff and modules only',
  }),
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

const text = (maxLength: number, description: string) => t.Optional(t.String({ maxLength, description }))
const ACCOUNT_READ = { 400: ['INVALID_MARGIN_LEVEL'], 404: ['ACCOUNT_NOT_FOUND', 'GROUP_NOT_FOUND'] } as const

export const accountManagerRoutes = (ctx: AccountsCtx) =>
  new Elysia({ name: 'account-manager-routes', seed: ctx.instanceId, prefix: '/manager' })
    .use(security(ctx))
    .get('/groups', ({ brand }) => listGroups(ctx, brand), {
      auth: ANY_STAFF,
      response: { 200: t.Object({ rows: t.Array(Group) }), ...errors() },
      detail: doc('Manager', 'Groups of the brand'),
    })
    .post('/groups', ({ brand, body }) => createGroup(ctx, brand, body), {
      auth: ACCOUNT_ADMINS,
      body: t.Object(
        {
          name: GroupName,
          account_mode: OneOf(['REAL', 'DEMO'], { description: 'REAL or DEMO money' }),
          currency: t.String({ pattern: '^[A-Z]{3}$', description: 'ISO 4217 code of the account currency' }),
          leverage: Leverage,
          ...GroupSettings,
        },
        {
          example: {
            name: 'demo\\GBP',
            account_mode: 'DEMO',
            currency: 'GBP',
            leverage: 100,
            default_deposit: 10000,
          },
        },
      ),
      response: { 200: Group, ...errors({ 409: ['GROUP_EXISTS'] }) },
      detail: doc('Manager', 'Create a group of the brand', {
        description:
          'margin_call defaults to 100 and stop_out to 50 (margin levels in %); stop_out must be below margin_call. ' +
          'The group starts with no security settings: add them with PUT /manager/groups/{id}/securities/{sec_group}. ' +
          '400 INVALID_DATA naming currency when no symbol converts it (a currency other than USD needs <CCY>USD ' +
          'or USD<CCY>: profits and margins are converted through them). 409 GROUP_EXISTS for a name the brand ' +
          'already uses.',
      }),
    })
    .patch('/groups/:id', ({ brand, params, body }) => updateGroup(ctx, brand, params.id, body), {
      auth: ACCOUNT_ADMINS,
      ...textInput({ params: GroupIdParam }),
      body: t.Object(
        { name: t.Optional(GroupName), leverage: t.Optional(Leverage), ...GroupSettings },
        { minProperties: 1, example: { leverage: 200 } },
      ),
      response: {
        200: Group,
        ...errors({ 404: ['GROUP_NOT_FOUND'], 409: ['GROUP_EXISTS', 'GROUP_IN_USE'] }),
      },
      detail: doc('Manager', 'Change name, leverage, demo deposit, margin call or stop-out of a group', {
        description:
          'Currency and account mode are fixed once accounts exist. 404 GROUP_NOT_FOUND outside the brand. ' +
          '409 GROUP_EXISTS for a name the brand already uses; 409 GROUP_IN_USE for a rename of a group that ' +
          'is named elsewhere (a prop program, or a running challenge bought from one, opens its accounts in ' +
          'it by name): change the program first; nothing is changed. New margin call and stop-out levels ' +
          "apply at once: the engine looks again at each of the group's accounts with open positions.",
      }),
    })
    .post(
      '/accounts',
      ({ brand, session, body }) => openManagedAccount({ ctx, brand, session, input: body }),
      {
        auth: ACCOUNT_ADMINS,
        body: t.Object(
          {
            group: t.String({ minLength: 1, maxLength: 64, description: 'group name of the brand' }),
            password: PasswordText('password of the account'),
            leverage: t.Optional(
              Int({ minimum: 1, maximum: 1000, description: "account leverage, 1:N; default the group's" }),
            ),
            name: text(128, 'account holder name'),
            email: text(254, 'contact email'),
            phone: text(64, 'phone number'),
            country: text(128, 'country'),
            city: text(128, 'city'),
            address: text(256, 'street address'),
            zipcode: text(32, 'postal code'),
            comment: text(256, 'staff comment'),
            customer_id: t.Optional(Id('owner: a customer of this brand (GET /customer/me shows the id)')),
          },
          { example: { group: 'real\\USD', password: 'new-account-1', name: 'New Client', customer_id: 1 } },
        ),
        response: {
          200: ManagedAccount,
          ...errors({
            400: ['INVALID_MARGIN_LEVEL'],
            404: ['GROUP_NOT_FOUND', 'CUSTOMER_NOT_FOUND', 'ACCOUNT_NOT_FOUND'],
          }),
        },
        detail: doc('Manager', 'Create a trading account', {
          description:
            'A DEMO group account receives the group default_deposit. 404 GROUP_NOT_FOUND; 404 CUSTOMER_NOT_FOUND ' +
            'when customer_id is not a customer of this brand.',
        }),
      },
    )
    .get(
      '/accounts/:login',
      ({ brand, session, params }) => managedAccount({ ctx, brand, session, login: params.login }),
      {
        auth: ANY_STAFF,
        ...textInput({ params: LoginParam }),
        response: { 200: ManagedAccount, ...errors(ACCOUNT_READ) },
        detail: doc('Manager', 'Read an account of the brand'),
      },
    )
    .patch(
      '/accounts/:login',
      ({ brand, session, params, body }) =>
        changeManagedAccount({ ctx, brand, session, login: params.login, input: body }),
      {
        auth: ACCOUNT_ADMINS,
        ...textInput({ params: LoginParam }),
        body: t.Object(
          {
            group: t.Optional(t.String({ minLength: 1, maxLength: 64, description: 'move to this group' })),
            leverage: t.Optional(Leverage),
            enable: t.Optional(Flag('0 disables the account: its sessions end at once')),
            enable_read_only: t.Optional(Flag('1: the account may sign in but not trade')),
            enable_change_password: t.Optional(Flag('1: the account may change its own password')),
            comment: text(256, 'staff comment'),
          },
          { minProperties: 1, example: { enable_read_only: 0, comment: 'verified' } },
        ),
        response: {
          200: ManagedAccount,
          ...errors({
            ...ACCOUNT_READ,
            409: ['ACCOUNT_MODE_MISMATCH', 'CURRENCY_MISMATCH', 'GROUP_LACKS_SYMBOLS'],
          }),
        },
        detail: doc('Manager', 'Change group, leverage, enable flags or comment of an account', {
          description:
            'Disabling an account (enable 0) ends every session of it at once. A group move keeps the account in its currency and mode: 409 CURRENCY_MISMATCH for a group of another currency (the balance would be relabelled, not converted), 409 ACCOUNT_MODE_MISMATCH between DEMO and REAL. ' +
            'It moves only to a group that can price and trade every symbol the account holds open positions or pending orders in (settings for their security groups, shown and tradable): 409 GROUP_LACKS_SYMBOLS names the others, and nothing is changed.',
        }),
      },
    )
    .post(
      '/accounts/:login/sessions/end',
      async ({ brand, params }) => {
        if (!(await endSessions(ctx, brand.id, { account: params.login }))) throw accountNotFound()
        return { data: 'OK' as const }
      },
      {
        auth: ACCOUNT_ADMINS,
        ...textInput({ params: LoginParam }),
        response: { 200: Ok, ...errors({ 404: ['ACCOUNT_NOT_FOUND'] }) },
        detail: doc('Manager', 'End every session of an account', {
          description:
            'Every token of the account stops working at once, on every instance (a suspected takeover); ' +
            'it signs in again with its password. 404 ACCOUNT_NOT_FOUND for a login that is not of this brand.',
        }),
      },
    )
    .post(
      '/customers/:id/sessions/end',
      async ({ brand, params }) => {
        if (!(await endSessions(ctx, brand.id, { customer: params.id })))
          throw refuse('CUSTOMER_NOT_FOUND', `customer ${params.id} not found`)
        return { data: 'OK' as const }
      },
      {
        auth: ACCOUNT_ADMINS,
        ...textInput({ params: { id: Id('customer id') } }),
        response: { 200: Ok, ...errors({ 404: ['CUSTOMER_NOT_FOUND'] }) },
        detail: doc('Manager', 'End every session of a customer and of its accounts', {
          description:
            "The customer's tokens and those of every account it owns stop working at once, on every " +
            'instance. 404 CUSTOMER_NOT_FOUND for a customer that is not of this brand.',
        }),
      },
    )
    .post(
      '/accounts/:login/balance',
      async ({ brand, session, params, body, request, set }) => {
        const r = await postBalanceOperation(ctx, {
          brandId: brand.id,
          login: params.login,
          op: OP_BY_TYPE[body.type],
          amount: body.amount,
          reason: body.reason ?? DEFAULT_REASON[body.type],
          comment: body.comment,
          apiData: body.api_data,
          idempotencyKey: balanceKeyOf(body.idempotency_key, request),
          createdBy: `staff:${session.staffId}`,
          // money out keeps the margin of open positions unless staff say otherwise (a correction)
          keepFreeMargin: body.allow_margin_call !== true,
        })
        // a repeat says so in a header too, as trading's do: the audit trail records it as replayed
        if (r.idempotent) set.headers['idempotent-replayed'] = 'true'
        return r
      },
      {
        auth: ACCOUNT_ADMINS,
        ...textInput({ params: LoginParam }),
        body: t.Object(
          {
            type: OneOf(['deposit', 'withdrawal', 'credit_in', 'credit_out'], {
              description: 'deposit / withdrawal move the balance, credit_in / credit_out the credit',
            }),
            amount: t.Number({
              exclusiveMinimum: 0,
              maximum: MAX_AMOUNT,
              description: 'positive, in the account currency, at most its decimals',
            }),
            reason: t.Optional(
              t.String({
                pattern: '^TR_REASON_[A-Z_]{1,40}$',
                description: 'ledger reason, e.g. TR_REASON_BONUS',
              }),
            ),
            comment: text(256, 'ledger comment'),
            api_data: t.Optional(
              t.Record(t.String({ pattern: '^.{1,64}$' }), t.Unknown(), {
                maxProperties: 50,
                additionalProperties: false,
                description: 'machine-readable context kept on the operation',
              }),
            ),
            allow_margin_call: t.Optional(
              t.Boolean({
                description:
                  'withdrawal / credit_out only: true lets it take the free margin below zero (a correction; the account may be stopped out at once). Default false: 400 NOT_ENOUGH_FREE_MARGIN',
              }),
            ),
            idempotency_key: t.Optional(
              t.String({
                minLength: 1,
                maxLength: 128,
                description:
                  "a repeat answers the first operation; a name, a colon and a number (copy-reward:17) is the form of the platform's own keys and is refused",
              }),
            ),
          },
          {
            example: {
              type: 'deposit',
              amount: 500,
              comment: 'bank transfer',
            },
          },
        ),
        response: {
          200: t.Object({ operation: Operation, idempotent: t.Boolean() }),
          ...errors({
            400: ['NOT_ENOUGH_FUNDS', 'NOT_ENOUGH_FREE_MARGIN'],
            404: ['ACCOUNT_NOT_FOUND'],
            409: ['IDEMPOTENCY_KEY_REUSED'],
            503: ['PRICE_STALE'],
          }),
        },
        detail: doc('Manager', 'Post a balance operation (deposit, withdrawal, credit in/out)', {
          idempotent: true,
          description:
            'One ledger row per call. 400 NOT_ENOUGH_FUNDS when a withdrawal or credit-out would go below ' +
            'zero. 400 NOT_ENOUGH_FREE_MARGIN when it would take more than the free margin of the open ' +
            'positions (a withdrawal: without the credit; a credit-out: with it), as the cashier refuses; ' +
            'allow_margin_call: true posts it anyway (a correction: the account may be stopped out at once). ' +
            'With open positions it is checked at current prices: 503 PRICE_STALE while they are not. A repeated idempotency_key (or Idempotency-Key header, as trading routes take it) returns the first operation with idempotent = true and the header Idempotent-Replayed: true; the key ' +
            'repeated with another type or amount answers 409 IDEMPOTENCY_KEY_REUSED; a header and a body key that differ answer 400 INVALID_DATA. A balance operation keeps its key for good (the ledger row holds it), not only 7 days.',
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
            cursor: t.Optional(Id('next_cursor of the previous page')),
            limit: t.Optional(
              Int({ minimum: 1, maximum: 500, description: 'rows per page, default 100', example: 100 }),
            ),
          },
        }),
        response: {
          200: t.Object({
            rows: t.Array(Operation),
            has_more: t.Boolean(),
            next_cursor: t.Union([Int(), t.Null()]),
          }),
          ...errors({ 404: ['ACCOUNT_NOT_FOUND'] }),
        },
        detail: doc('Manager', 'Ledger of an account, newest first (cursor pagination)'),
      },
    )

nameModels({ Group, BalanceOperation: Operation, ManagedAccount })

/**
 * The operation's idempotency key: the body's `idempotency_key`, or the `Idempotency-Key` header trading
 * routes take (a client sending the header alone posted twice on a retry); both and different is a client
 * bug, 400 INVALID_DATA.
 */
function balanceKeyOf(body: string | undefined, request: Request) {
  const header = idempotencyKeyOf(request)
  if (header !== undefined && body !== undefined && header !== body)
    throw invalid('idempotency_key: differs from the Idempotency-Key header; send one key')
  return body ?? header
}
