import { Elysia, t } from 'elysia'
import type { AppContext } from '../../context'
import { ANY_SESSION } from '../../platform/auth/session'
import { doc, errors } from '../../platform/openapi'
import { Int, Login, Password, textInput } from '../../platform/schemas'
import { security } from '../../platform/security'
import { avatarBelongs } from '../uploads/service'
import { fromMinor } from './domain/money'
import { openAccount } from './open'
import { balanceView, loadAccountView, profileView, requireMargin, updateProfile } from './service'

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
  enable_change_password: int,
  leverage: int,
  regdate: Int({ description: 'epoch seconds' }),
  prevbalance: num,
  prevmonthbalance: num,
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

const ProfileUpdate = t.Object({
  login: t.Optional(Login),
  name: t.Optional(t.String({ maxLength: 128 })),
  avatar: t.Optional(
    t.String({ maxLength: 4096, description: 'uuid returned by POST /upload (account_avatar)' }),
  ),
  phone: t.Optional(t.String({ maxLength: 64 })),
  address: t.Optional(t.String({ maxLength: 256 })),
  city: t.Optional(t.String({ maxLength: 128 })),
  state: t.Optional(t.String({ maxLength: 128 })),
  country: t.Optional(t.String({ maxLength: 128 })),
  zipcode: t.Optional(t.String({ maxLength: 32 })),
  user_color: t.Optional(t.String({ maxLength: 32 })),
})

const OpenedAccount = t.Object({
  login: int,
  group: str,
  currency: str,
  leverage: int,
  balance: num,
  account_mode: t.Union([t.Literal('REAL'), t.Literal('DEMO')]),
})

const scopeNote =
  'A user session reads its own login; a customer session one of its accounts (`login` required when it ' +
  'owns several); staff any account of their brand (`login` required). Accounts of another customer or ' +
  'brand answer 404 ACCOUNT_NOT_FOUND.'

export const accountRoutes = (ctx: AppContext) =>
  new Elysia({ name: 'account-routes', seed: ctx.instanceId })
    .use(security(ctx))
    .get(
      '/account/me',
      async ({ brand, session, query }) => {
        const view = await loadAccountView(ctx, brand, session, query.login)
        return profileView(view, await requireMargin(ctx, view))
      },
      {
        auth: { roles: ANY_SESSION },
        ...textInput({ query: { login: t.Optional(Login) } }),
        response: { 200: Profile, ...errors(400, 401, 403, 404, 500) },
        detail: doc('Account', 'Account profile with live margin figures', { description: scopeNote }),
      },
    )
    .put(
      '/account/me',
      ({ brand, session, body }) => updateProfile(ctx, brand, session, body ?? {}, avatarBelongs),
      {
        auth: { roles: ANY_SESSION },
        body: t.Optional(ProfileUpdate),
        response: { 200: ProfileUpdateResult, ...errors(400, 401, 403, 404, 500) },
        detail: doc('Account', 'Update the account profile', {
          description: `${scopeNote} Only the fields sent are changed.`,
        }),
      },
    )
    .get(
      '/balance/me',
      async ({ brand, session, query }) => {
        const view = await loadAccountView(ctx, brand, session, query.login)
        return balanceView(view, await requireMargin(ctx, view))
      },
      {
        auth: { roles: ANY_SESSION },
        ...textInput({ query: { login: Login } }),
        response: { 200: Balance, ...errors(400, 401, 403, 404, 500) },
        detail: doc('Account', 'Balance and margin snapshot of an account', { description: scopeNote }),
      },
    )
    .post(
      '/customer/accounts',
      async ({ brand, session, body }) => {
        const { account, group } = await openAccount(ctx, {
          brandId: brand.id,
          customerId: session.customerId!,
          group: body.group,
          password: body.password,
          leverage: body.leverage,
          name: body.name,
          allowedModes: ['REAL', 'DEMO'],
          createdBy: `customer:${session.customerId}`,
        })
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
        body: t.Object({
          group: t.String({ minLength: 1, maxLength: 64, description: 'REAL or DEMO group of the brand' }),
          password: Password,
          leverage: t.Optional(Int({ minimum: 1, maximum: 1000 })),
          name: t.Optional(t.String({ maxLength: 128 })),
        }),
        response: { 200: OpenedAccount, ...errors(400, 401, 403, 404) },
        detail: doc('Account', 'Open a trading account for the signed-in customer', {
          description: 'A DEMO account receives the group default_deposit as a balance operation.',
        }),
      },
    )
