import { Elysia, t } from 'elysia'
import { ANY_SESSION, SESSION_TYPES, STAFF_SESSIONS } from '../../kernel/auth/session'
import { clientIp } from '../../kernel/http/http'
import { doc, errors } from '../../kernel/http/openapi'
import { Int, Login, nameModels, Ok, OneOf, PasswordText, PasswordToCheck } from '../../kernel/http/schemas'
import { security } from '../../kernel/http/security'
import { CustomerSchema as Customer } from '../accounts'
import type { AuthCtx } from './context'
import {
  registerCustomer,
  setAccountPassword,
  signInAccount,
  signInCustomer,
  signInStaff,
  signOut,
  signOutEverywhere,
} from './service'

/** The kind of session a token carries (who may call what: every operation's x-roles). */
const SessionKind = OneOf(SESSION_TYPES, { description: 'the kind of session the token carries' })

const SignInResult = t.Object({
  id: Int(),
  login: Int(),
  regdate: Int({ description: 'epoch seconds' }),
  leverage: Int(),
  email: t.String(),
  avatar: t.String(),
  name: t.String(),
  phone: t.String(),
  address: t.String(),
  city: t.String(),
  state: t.String(),
  country: t.String(),
  zipcode: t.String(),
  group: t.String(),
  currency: t.String(),
  session_type: SessionKind,
  expires_at: Int({ description: 'token expiry, epoch seconds' }),
  must_change_password: t.Boolean({
    description:
      'the password was generated (a prop challenge account): every route but PUT /account/password and the sign-outs (POST /sign/out, /sign/out/all) answers 403 PASSWORD_CHANGE_REQUIRED until it is changed',
  }),
  __token: t.String({ description: 'The JWT; also set as an HttpOnly cookie' }),
})

const CustomerSession = t.Composite([
  Customer,
  t.Object({ session_type: SessionKind, expires_at: Int(), __token: t.String() }),
])

const StaffSession = t.Object({
  id: Int(),
  login: Int(),
  name: t.String(),
  role: t.Union([t.Literal('MANAGER'), t.Literal('ADMIN'), t.Literal('DEALER')]),
  session_type: SessionKind,
  expires_at: Int(),
  __token: t.String(),
})

const Attribution = t.Record(t.String({ pattern: '^[a-z][a-z0-9_]{0,31}$' }), t.String({ maxLength: 256 }), {
  description: 'public attribution values (campaign, affiliate, link, utm_*, sub ids); not credentials',
  maxProperties: 20,
  additionalProperties: false,
})

export const authRoutes = (ctx: AuthCtx) => {
  const cookieName = ctx.config.jwt.cookieName
  const setSessionCookie = (cookie: Record<string, any>, token: string) =>
    cookie[cookieName].set({
      value: token,
      httpOnly: true,
      secure: ctx.config.production,
      sameSite: 'lax',
      path: '/',
      maxAge: ctx.config.jwt.ttlSeconds,
    })
  // the session cookie gone from the browser (a sign-out)
  const clearCookie = (cookie: Record<string, any>) =>
    cookie[cookieName].set({
      value: '',
      maxAge: 0,
      expires: new Date(0),
      path: '/',
      httpOnly: true,
      sameSite: 'lax',
    })

  return new Elysia({ name: 'auth-routes', seed: ctx.instanceId })
    .use(security(ctx))
    .post(
      '/sign/in',
      async ({ body, brand, cookie, request, server, requestId }) => {
        const r = await signInAccount(ctx, brand, body, { ip: clientIp(ctx, request, server), requestId })
        setSessionCookie(cookie, r.token)
        return r.body
      },
      {
        brand: true,
        body: t.Object(
          { login: Login, password: PasswordToCheck('the account password') },
          { example: { login: 100001, password: 'demo-pass-1' } },
        ),
        response: {
          200: SignInResult,
          ...errors({
            400: ['INVALID_MARGIN_LEVEL'],
            402: ['USER_DISABLED'],
            403: ['USER_NOT_FOUND_OR_INCORRECT'],
            404: ['GROUP_NOT_FOUND'],
            429: ['TOO_MANY_ATTEMPTS'],
          }),
        },
        detail: {
          ...doc('Auth', 'Sign in with a trading account', {
            secured: false,
            description:
              'Returns the JWT in `__token` and sets it as an HttpOnly cookie. Errors: 400 INVALID_DATA, ' +
              '400 INVALID_MARGIN_LEVEL, 402 USER_DISABLED, 403 USER_NOT_FOUND_OR_INCORRECT (also for an ' +
              'account of another brand), 404 GROUP_NOT_FOUND, 429 TOO_MANY_ATTEMPTS after repeated failures (or too many sign-ins at once from one address: retry in a second).',
          }),
        },
      },
    )
    .post(
      '/customer/sign/in',
      async ({ body, brand, cookie, request, server, requestId }) => {
        const r = await signInCustomer(ctx, brand, body, { ip: clientIp(ctx, request, server), requestId })
        setSessionCookie(cookie, r.token)
        return r.body
      },
      {
        brand: true,
        body: t.Object(
          {
            email: t.String({ format: 'email', maxLength: 254, description: 'the customer email' }),
            password: PasswordToCheck('the customer password'),
          },
          { example: { email: 'demo@example.com', password: 'demo-pass-1' } },
        ),
        response: {
          200: CustomerSession,
          ...errors({
            402: ['USER_DISABLED'],
            403: ['USER_NOT_FOUND_OR_INCORRECT'],
            429: ['TOO_MANY_ATTEMPTS'],
          }),
        },
        detail: doc('Auth', 'Sign in as a customer (SESSION_CUSTOMER)', { secured: false }),
      },
    )
    .post(
      '/customer/register',
      ({ body, brand, request, server }) =>
        registerCustomer(ctx, brand, body, {
          ip: clientIp(ctx, request, server),
          cookies: request.headers.get('cookie'),
          userAgent: request.headers.get('user-agent'),
        }),
      {
        brand: true,
        body: t.Object(
          {
            email: t.String({
              format: 'email',
              maxLength: 254,
              description: 'sign-in email, unique per brand',
            }),
            password: PasswordText('password for POST /customer/sign/in'),
            name: t.String({ minLength: 1, maxLength: 128, description: 'full name' }),
            phone: t.Optional(t.String({ maxLength: 64, description: 'phone number' })),
            country: t.Optional(
              t.String({
                pattern: '^[A-Z]{2}$',
                description: 'country of residence, ISO 3166-1 alpha-2 (GB, DE, US)',
              }),
            ),
            attribution: t.Optional(Attribution),
            installation_id: t.Optional(
              t.String({
                pattern: '^[A-Za-z0-9._:-]{8,128}$',
                description:
                  'the app installation registering (recorded with POST /app): attributes from its install',
              }),
            ),
          },
          {
            example: {
              email: 'new.trader@example.com',
              password: 'a-new-password',
              name: 'New Trader',
              country: 'GB',
            },
          },
        ),
        response: {
          200: t.Object({
            status: t.Literal('accepted'),
            message: t.String({ description: 'what to do next: sign in with POST /customer/sign/in' }),
          }),
          ...errors({ 429: ['TOO_MANY_REQUESTS'] }),
        },
        detail: doc('Auth', 'Register a customer', {
          secured: false,
          description:
            'Creates the customer; the answer is the same whether the email was new or already registered ' +
            '(registration does not reveal which emails exist). Then sign in with POST /customer/sign/in. ' +
            '429 TOO_MANY_REQUESTS beyond REGISTER_MAX_PER_HOUR registrations per client address. ' +
            'Attribution (spec 4.16), first match wins: the install of `installation_id` when it carried values; ' +
            'the `attribution` values of the body (an external landing page); the latest touch with values of the ' +
            'visitor cookie `tcs_vid` within ATTRIBUTION_WINDOW_DAYS; its latest direct touch. Staff read the decision ' +
            'with GET /manager/customers/{id}/attribution.',
        }),
      },
    )
    .post(
      '/manager/sign/in',
      async ({ body, brand, cookie, request, server, requestId }) => {
        const r = await signInStaff(ctx, brand, body, { ip: clientIp(ctx, request, server), requestId })
        setSessionCookie(cookie, r.token)
        return r.body
      },
      {
        brand: true,
        body: t.Object(
          {
            login: Int({ minimum: 0, description: 'staff login', example: 1 }),
            password: PasswordToCheck('the staff password'),
          },
          { example: { login: 1, password: 'manager-pass-1' } },
        ),
        response: {
          200: StaffSession,
          ...errors({
            402: ['USER_DISABLED'],
            403: ['USER_NOT_FOUND_OR_INCORRECT'],
            429: ['TOO_MANY_ATTEMPTS'],
          }),
        },
        detail: doc('Auth', 'Sign in as staff (SESSION_MANAGER, SESSION_ADMIN or SESSION_DEALER)', {
          secured: false,
        }),
      },
    )
    .post(
      '/sign/out',
      async ({ session, cookie }) => {
        await signOut(ctx, session)
        clearCookie(cookie)
        return { data: 'OK' as const }
      },
      {
        // an account that must change its generated password may still leave
        auth: { roles: ANY_SESSION, signOut: true },
        response: { 200: Ok, ...errors() },
        detail: doc('Auth', 'Sign out: revoke the token and clear the cookie'),
      },
    )
    .post(
      '/sign/out/all',
      async ({ session, cookie }) => {
        await signOutEverywhere(ctx, session)
        clearCookie(cookie)
        return { data: 'OK' as const }
      },
      {
        // an account that must change its generated password may still leave
        auth: { roles: ANY_SESSION, signOut: true },
        response: { 200: Ok, ...errors() },
        detail: doc('Auth', 'Sign out everywhere: end every session of the caller', {
          description:
            'Every token of the caller stops working at once, on every instance, this one included: an ' +
            "account's; a customer's and those of all its accounts; a staff member's. The cookie is cleared.",
        }),
      },
    )
    .put('/password', ({ body, brand }) => setAccountPassword(ctx, brand, body), {
      auth: { roles: STAFF_SESSIONS },
      body: t.Object(
        { login: Login, password: PasswordText('the new password') },
        // the demo's own password: trying the example keeps the README's credentials true
        { example: { login: 100002, password: 'demo-pass-1' } },
      ),
      response: { 200: t.Object({ login: t.Literal('OK') }), ...errors({ 401: ['UPDATE_PASSWORD_ERROR'] }) },
      detail: doc('Auth', "Set a trading account's password (staff)", {
        description:
          '401 UPDATE_PASSWORD_ERROR when the account does not exist in this brand or the update fails. ' +
          'Every session of the account ends: its tokens stop working at once.',
      }),
    })
}

nameModels({ SignInResult, CustomerSession, StaffSession })
