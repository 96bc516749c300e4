import { Elysia, t } from 'elysia'
import { ANY_SESSION } from '../../kernel/auth/session'
import { clientIp } from '../../kernel/http/http'
import { doc, errors } from '../../kernel/http/openapi'
import { Int, Login, nameModels, PasswordText, textInput } from '../../kernel/http/schemas'
import { security } from '../../kernel/http/security'
import type { AccountsCtx } from './context'
import { customerProfile } from './customers'
import { fromMinor } from './domain/money'
import { openCustomerAccount, selfServiceGroups } from './open'
import { changeAccountPassword, setOwnAccountPassword } from './passwords'
import { balanceView, loadAccountView, profileView, requireMargin, updateProfile } from './service'

const PasswordSet = t.Object({
  data: t.Literal('OK'),
  sessions_ended: t.Boolean({
    description: 'every session of the account ended; sign in with the new password',
  }),
})

const num = t.Number()
const int = Int()
const str = t.String()

export const Profile = t.Object({
  id: int,
  login: int,
  currency: str,
  group: str,
  comment: str,
  avatar: str,
  email: str,
  name: str,
  phone: str,
  address: str,
  city: str,
  state: str,
  country: str,
  zipcode: str,
  user_color: str,
  enable: int,
  enable_read_only: int,
  read_only_reason: t.String({
    description: 'why the account is read-only (e.g. its prop challenge failed)',
  }),
  enable_change_password: int,
  leverage: int,
  regdate: Int({ description: 'epoch seconds' }),
  prevbalance: t.Number({
    description:
      'the balance at the end of the previous trading day (00:00 UTC, when the daily swap is charged), as the ledger stood then; written within two minutes of the day end (job accounts.day-close)',
  }),
  prevmonthbalance: t.Number({
    description:
      'the balance at the end of the previous month (00:00 UTC of the first day of this one), as the ledger stood then',
  }),
  balance: num,
  storage: num,
  commission: num,
  credit: num,
  margin: num,
  margin_free: num,
  margin_level: num,
  equity: num,
})

const ProfileUpdateResult = t.Object({
  login: int,
  avatar: str,
  name: str,
  phone: str,
  address: str,
  city: str,
  state: str,
  country: str,
  zipcode: str,
  user_color: str,
  update_time: Int({ description: 'epoch seconds' }),
})

const Balance = t.Object({
  balance: num,
  credit: num,
  profit: num,
  commission: num,
  storage: num,
  margin: num,
  margin_free: num,
  margin_level: num,
  equity: num,
  level_type: Int({ description: '0 normal, 1 margin call level reached, 2 stop-out level reached' }),
  leverage: int,
})

const ProfileUpdate = t.Object(
  {
    login: t.Optional(
      Int({
        minimum: 0,
        example: 100001,
        description: 'which account: optional for an account session, needed by a customer owning several',
      }),
    ),
    name: t.Optional(t.String({ maxLength: 128, description: 'account holder name' })),
    avatar: t.Optional(
      t.String({ maxLength: 4096, description: 'uuid returned by POST /upload with purpose account_avatar' }),
    ),
    phone: t.Optional(t.String({ maxLength: 64, description: 'phone number' })),
    address: t.Optional(t.String({ maxLength: 256, description: 'street address' })),
    city: t.Optional(t.String({ maxLength: 128, description: 'city' })),
    state: t.Optional(t.String({ maxLength: 128, description: 'state or region' })),
    country: t.Optional(t.String({ maxLength: 128, description: 'country' })),
    zipcode: t.Optional(t.String({ maxLength: 32, description: 'postal code' })),
    user_color: t.Optional(
      t.String({ maxLength: 32, description: 'colour the terminal shows for the account' }),
    ),
  },
  { example: { name: 'Demo Real USD', city: 'London', country: 'GB' } },
)

export const Customer = t.Object({
  id: Int(),
  email: t.String(),
  name: t.String(),
  phone: t.String(),
  country: t.String(),
  deposit_allowed: Int(),
  withdrawal_allowed: Int(),
  accounts: t.Array(Int(), { description: 'logins of the trading accounts the customer owns' }),
})

const OpenedAccount = t.Object({
  login: int,
  group: str,
  currency: str,
  leverage: int,
  balance: num,
  account_mode: t.Union([t.Literal('REAL'), t.Literal('DEMO')]),
})

const OpenGroup = t.Object({
  name: str,
  account_mode: t.Union([t.Literal('REAL'), t.Literal('DEMO')]),
  currency: str,
  leverage: Int({ description: 'default (and highest self-service) leverage' }),
  leverage_options: t.Array(int, { description: 'leverages a customer may choose when opening' }),
  default_deposit: t.Number({ description: 'balance a new DEMO account starts with' }),
})

const scopeNote =
  'A user session reads its own login; a customer session one of its accounts (`login` required when it ' +
  'owns several); staff any account of their brand (`login` required). Accounts of another customer or ' +
  'brand answer 404 ACCOUNT_NOT_FOUND.'
const READ_CODES = { 400: ['INVALID_MARGIN_LEVEL'], 404: ['ACCOUNT_NOT_FOUND', 'GROUP_NOT_FOUND'] } as const

export const accountRoutes = (ctx: AccountsCtx) =>
  new Elysia({ name: 'account-routes', seed: ctx.instanceId })
    .use(security(ctx))
    .get(
      '/account/me',
      async ({ brand, session, query }) => {
        const view = await loadAccountView({ ctx, brand, session, login: query.login })
        return profileView(view, await requireMargin({ ctx, input: view }))
      },
      {
        auth: { roles: ANY_SESSION },
        ...textInput({ query: { login: t.Optional(Login) } }),
        response: { 200: Profile, ...errors(READ_CODES) },
        detail: doc('Account', 'Account profile with live margin figures', { description: scopeNote }),
      },
    )
    .put('/account/me', ({ brand, session, body }) => updateProfile({ ctx, brand, session, input: body }), {
      auth: { roles: ANY_SESSION },
      // required here: a body left out is read as {} (optionalBody below), one that is sent must be an object
      body: ProfileUpdate,
      response: { 200: ProfileUpdateResult, ...errors({ 404: ['ACCOUNT_NOT_FOUND'] }) },
      detail: doc('Account', 'Update the account profile', {
        description: `${scopeNote} Only the fields sent are changed; the body may be left out (nothing changes), but a body that is sent must be a JSON object.`,
        optionalBody: true,
      }),
    })
    .get(
      '/balance/me',
      async ({ brand, session, query }) => {
        const view = await loadAccountView({ ctx, brand, session, login: query.login })
        return balanceView(view, await requireMargin({ ctx, input: view }))
      },
      {
        auth: { roles: ANY_SESSION },
        ...textInput({ query: { login: Login } }),
        response: { 200: Balance, ...errors(READ_CODES) },
        detail: doc('Account', 'Balance and margin snapshot of an account', {
          description: `\`login\` is required here (spec 4.3b), whatever the session: a user session names its own. ${scopeNote}`,
        }),
      },
    )
    .get('/customer/me', ({ brand, session }) => customerProfile(ctx, brand, session), {
      auth: { roles: ['SESSION_CUSTOMER'] },
      response: { 200: Customer, ...errors({ 404: ['CUSTOMER_NOT_FOUND'] }) },
      detail: doc('Auth', 'Current customer profile and its account logins'),
    })
    .get('/customer/groups', ({ brand }) => selfServiceGroups(ctx, brand), {
      auth: { roles: ['SESSION_CUSTOMER'] },
      response: { 200: t.Object({ rows: t.Array(OpenGroup) }), ...errors() },
      detail: doc('Account', 'Groups a customer may open accounts in, with their leverage options'),
    })
    .post(
      '/customer/accounts',
      async ({ brand, session, body, request, server }) => {
        const { account, group } = await openCustomerAccount(
          ctx,
          {
            brandId: brand.id,
            customerId: session.customerId!,
            group: body.group,
            password: body.password,
            leverage: body.leverage,
            name: body.name,
            allowedModes: ['REAL', 'DEMO'],
            selfService: true,
            createdBy: `customer:${session.customerId}`,
          },
          clientIp(ctx, request, server),
        )
        return {
          login: account.login,
          group: group.name,
          currency: group.currency,
          leverage: account.leverage,
          balance: fromMinor(account.balance, group.currency),
          account_mode: group.accountMode,
        }
      },
      {
        auth: { roles: ['SESSION_CUSTOMER'] },
        body: t.Object(
          {
            group: t.String({
              minLength: 1,
              maxLength: 64,
              description: 'name of a REAL or DEMO group of the brand (GET /customer/groups)',
            }),
            password: PasswordText('password of the new account'),
            leverage: t.Optional(
              Int({
                minimum: 1,
                maximum: 1000,
                description: "one of the group's leverage_options; default the group's leverage",
              }),
            ),
            name: t.Optional(t.String({ maxLength: 128, description: 'account holder name' })),
          },
          { example: { group: 'demo\\USD', password: 'my-demo-pass-1', leverage: 100, name: 'My demo' } },
        ),
        response: {
          200: OpenedAccount,
          ...errors({ 404: ['GROUP_NOT_FOUND'], 429: ['TOO_MANY_REQUESTS'] }),
        },
        detail: doc('Account', 'Open a trading account for the signed-in customer', {
          description:
            "A DEMO account receives the group default_deposit as a balance operation. The leverage must be one of the group's leverage_options (400 INVALID_DATA otherwise). At most ACCOUNT_OPEN_MAX_PER_DAY openings per customer and per client address a day (429 TOO_MANY_REQUESTS); a request that opens nothing (refused) does not count.",
        }),
      },
    )
    .put(
      '/customer/accounts/:login/password',
      ({ brand, session, params, body }) =>
        setOwnAccountPassword(ctx, brand, session, params.login, body.password),
      {
        auth: { roles: ['SESSION_CUSTOMER'] },
        ...textInput({ params: { login: Login } }),
        body: t.Object(
          {
            password: PasswordText('the new password'),
          },
          // in the document's order PUT /account/password's example sets the demo's own password back
          { example: { password: 'demo-pass-2' } },
        ),
        response: {
          200: PasswordSet,
          ...errors({
            403: ['CHANGE_PASSWORD_DISABLED'],
            404: ['ACCOUNT_NOT_FOUND'],
            409: ['PASSWORD_CHANGED'],
          }),
        },
        detail: doc('Account', "Set the password of one of the customer's accounts", {
          description:
            "For a lost or forgotten password, such as a prop challenge's temporary one (shown once). Every session of the account ends; an account that had to change its generated password no longer has to. 403 CHANGE_PASSWORD_DISABLED where staff forbade the account to change its password (enable_change_password 0), as on PUT /account/password, unless the account must change a generated password (must_change_password 1: that wins). 404 ACCOUNT_NOT_FOUND for an account that is not the customer's. 409 PASSWORD_CHANGED when the account's password changed between this request's read and its write (PUT /account/password at the same moment): nothing was set; set it again.",
        }),
      },
    )
    .put(
      '/account/password',
      ({ brand, session, body, request, server }) =>
        changeAccountPassword(ctx, brand, session, body, { ip: clientIp(ctx, request, server) }),
      {
        auth: { roles: ['SESSION_USER'], whileConfined: true },
        body: t.Object(
          {
            password: PasswordText('the current password', 1),
            new_password: PasswordText('the new password'),
          },
          // the account's password as PUT /customer/accounts/{login}/password's example set it, back to the demo's
          { example: { password: 'demo-pass-2', new_password: 'demo-pass-1' } },
        ),
        response: {
          200: PasswordSet,
          ...errors({
            403: ['INCORRECT_PASSWORD', 'CHANGE_PASSWORD_DISABLED'],
            429: ['TOO_MANY_ATTEMPTS'],
          }),
        },
        detail: doc('Account', "Change the signed-in account's password", {
          description:
            'Proves the current password. Every session of the account ends, this one too: sign in again. With the sign-outs, the one route open to an account with a generated password (must_change_password), which every other route answers 403 PASSWORD_CHANGE_REQUIRED. 403 CHANGE_PASSWORD_DISABLED where staff forbade the account to change its password (enable_change_password 0), unless it must change a generated one (that wins). The current password is checked as POST /sign/in checks it, under the same count of failures for the login and for the client address: 429 TOO_MANY_ATTEMPTS once locked, whatever the password. 403 INCORRECT_PASSWORD also when the password proved was replaced before the change was written (another change at the same moment won).',
        }),
      },
    )

nameModels({
  AccountProfile: Profile,
  BalanceSnapshot: Balance,
  Customer,
  OpenedAccount,
  ProfileUpdateResult,
  GroupOffer: OpenGroup,
  PasswordSet,
})
