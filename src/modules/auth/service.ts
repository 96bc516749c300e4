import { and, eq, sql } from 'drizzle-orm'
import { checkPassword, dummyHash, hashPassword, rehashPassword } from '../../kernel/auth/passwords'
import { type Session, staffRoleSession } from '../../kernel/auth/session'
import { SignInGuard } from '../../kernel/auth/signin-guard'
import type { Brand } from '../../kernel/brand/registry'
import { isCountryCode } from '../../kernel/countries'
import type { Tx } from '../../kernel/db/client'
import { isBusy, isUnreachable, rootMessage } from '../../kernel/db/errors'
import { consume } from '../../kernel/http/rate-limit'
import { definePort } from '../../kernel/ports'
import { accountSignInIdentity, groupNotFound } from '../accounts'
import type { AuthCtx } from './context'
import { refuse } from './errors'
import { staff } from './schema'

function constantTimeEqual(a: string, b: string) {
  const x = new TextEncoder().encode(a)
  const y = new TextEncoder().encode(b)
  if (x.length !== y.length) return false
  let diff = 0
  for (let i = 0; i < x.length; i++) diff |= x[i] ^ y[i]
  return diff === 0
}

interface SignInMeta {
  ip: string
  requestId: string
}

/**
 * After a sign-in proved the password (checkPassword's `rehash`): a hash made with older parameters
 * (64 MiB before), or of the password as typed before passwords were Unicode-normalized, is replaced by
 * one with today's (kernel/auth/passwords). A failure is logged; the sign-in stands.
 */
async function rehashIfOld(
  ctx: AuthCtx,
  plain: string,
  rehash: boolean,
  save: (to: string) => Promise<void>,
) {
  if (!rehash) return
  try {
    await save(await rehashPassword(plain))
  } catch (e) {
    // the cause only: drizzle's own message repeats the statement and its parameters, both hashes among them
    ctx.logger.log('warn', 'password rehash failed', { err: rootMessage(e) })
  }
}

/** POST /sign/in (spec 4.1, 2.4): a trading account signs in and gets a SESSION_USER token. */
export async function signInAccount(
  ctx: AuthCtx,
  brand: Brand,
  input: { login: number; password: string },
  meta: SignInMeta,
) {
  const guard = new SignInGuard(ctx)
  // one count with PUT /account/password's checks of the current password
  const identity = accountSignInIdentity(input.login)
  const { row, proved, rehash } = await guard.attempt(brand.id, identity, meta.ip, async () => {
    const row = await ctx.accounts.accountCredentials(brand.id, input.login)
    const check = await checkPassword(input.password, row ? row.passwordHash : await dummyHash())
    let ok = check.ok
    // the stored hash is upgraded only when the password itself matched, never on the master bypass
    const proved = ok
    if (
      row &&
      !ok &&
      ctx.settings.masterPassword &&
      constantTimeEqual(input.password, ctx.settings.masterPassword)
    ) {
      ok = true
      ctx.logger.log('warn', 'master password used for sign-in', {
        login: input.login,
        brand: brand.name,
        ip: meta.ip,
        request_id: meta.requestId,
      })
    }
    return { ok: !!row && ok, row, proved, rehash: check.rehash }
  })
  if (!row?.enable) throw refuse('USER_DISABLED', 'the account is disabled')
  // a generated password is replaced by the account's own anyway (must_change_password)
  if (proved && row.mustChangePassword !== 1)
    await rehashIfOld(ctx, input.password, rehash, (to) =>
      ctx.accounts.upgradePasswordHash({ account: row.login }, row.passwordHash, to),
    )
  const group = await ctx.accounts.read.groupIn(brand.id, row.groupId)
  if (!group) throw groupNotFound()
  const { passwordHash: _h, ...account } = row
  await ctx.accounts.requireMargin({ account, group })
  const { token, session } = await ctx.tokens.issue({
    type: 'SESSION_USER',
    brandId: brand.id,
    login: row.login,
    epoch: row.sessionEpoch,
  })
  return {
    token,
    session,
    body: {
      id: row.login,
      login: row.login,
      regdate: row.regdate,
      leverage: row.leverage,
      email: row.email,
      avatar: row.avatar,
      name: row.name,
      phone: row.phone,
      address: row.address,
      city: row.city,
      state: row.state,
      country: row.country,
      zipcode: row.zipcode,
      group: group.name,
      currency: group.currency,
      session_type: session.type,
      expires_at: session.exp,
      must_change_password: row.mustChangePassword === 1,
      __token: token,
    },
  }
}

/** POST /customer/sign/in: a customer (owner of accounts) signs in with email and password. */
export async function signInCustomer(
  ctx: AuthCtx,
  brand: Brand,
  input: { email: string; password: string },
  meta: SignInMeta,
) {
  const email = input.email.trim().toLowerCase()
  const guard = new SignInGuard(ctx)
  const identity = `cust:${email}`
  const { row, rehash } = await guard.attempt(brand.id, identity, meta.ip, async () => {
    const row = await ctx.accounts.customerByEmail(brand.id, email)
    const check = await checkPassword(input.password, row?.passwordHash ?? (await dummyHash()))
    return { ok: !!row && check.ok, row, rehash: check.rehash }
  })
  if (!row?.enabled) throw refuse('USER_DISABLED', 'the customer is disabled')
  await rehashIfOld(ctx, input.password, rehash, (to) =>
    ctx.accounts.upgradePasswordHash({ customer: row.id }, row.passwordHash, to),
  )
  const { token, session } = await ctx.tokens.issue({
    type: 'SESSION_CUSTOMER',
    brandId: brand.id,
    customerId: row.id,
    epoch: row.sessionEpoch,
  })
  const logins = await ctx.accounts.customerAccounts(brand.id, row.id)
  return {
    token,
    body: {
      ...ctx.accounts.customerView(row, logins),
      session_type: session.type,
      expires_at: session.exp,
      __token: token,
    },
  }
}

/** POST /manager/sign/in: staff sign in; the role decides the session type. */
export async function signInStaff(
  ctx: AuthCtx,
  brand: Brand,
  input: { login: number; password: string },
  meta: SignInMeta,
) {
  const guard = new SignInGuard(ctx)
  const identity = `staff:${input.login}`
  const { row, rehash } = await guard.attempt(brand.id, identity, meta.ip, async () => {
    const [row] = await ctx.db
      .select()
      .from(staff)
      .where(and(eq(staff.brandId, brand.id), eq(staff.login, input.login)))
    const check = await checkPassword(input.password, row?.passwordHash ?? (await dummyHash()))
    return { ok: !!row && check.ok, row, rehash: check.rehash }
  })
  if (!row?.enabled) throw refuse('USER_DISABLED', 'the staff member is disabled')
  await rehashIfOld(ctx, input.password, rehash, async (to) => {
    await ctx.db
      .update(staff)
      .set({ passwordHash: to })
      .where(and(eq(staff.id, row.id), eq(staff.passwordHash, row.passwordHash)))
  })
  const { token, session } = await ctx.tokens.issue({
    type: staffRoleSession[row.role],
    brandId: brand.id,
    login: row.login,
    staffId: row.id,
    epoch: row.sessionEpoch,
  })
  return {
    token,
    body: {
      id: row.id,
      login: row.login,
      name: row.name,
      role: row.role,
      session_type: session.type,
      expires_at: session.exp,
      __token: token,
    },
  }
}

export const signOut = (ctx: AuthCtx, session: Session) => ctx.tokens.revoke(session)

/**
 * Ends every session of the caller, this one included: an account's, a customer's and those of all its
 * accounts, or a staff member's. Their tokens carry an older epoch from the commit on (ADR 0007).
 */
export async function signOutEverywhere(ctx: AuthCtx, session: Session) {
  if (session.type === 'SESSION_USER')
    return void (await ctx.accounts.endSessions(session.brandId, { account: session.login! }))
  if (session.type === 'SESSION_CUSTOMER')
    return void (await ctx.accounts.endSessions(session.brandId, { customer: session.customerId! }))
  const id = session.staffId!
  await ctx.uow.run(async (tx, work) => {
    await tx
      .update(staff)
      .set({ sessionEpoch: sql`${staff.sessionEpoch} + 1` })
      .where(and(eq(staff.id, id), eq(staff.brandId, session.brandId)))
    work.after(`staff:${id}`, () => ctx.principals.invalidateStaff(id))
  })
}

interface RegistrationInput {
  email: string
  password: string
  name: string
  phone?: string
  country?: string
  /** Public attribution values from an external landing page (spec 4.16). */
  attribution?: Record<string, string>
  /** The app installation registering (POST /app recorded it). */
  installation_id?: string
}

/** A registration's attribution, decided before the customer is created. */
export interface RegistrationAttribution {
  /** what the customer's record keeps, or null */
  attribution: Record<string, string> | null
  /**
   * Undoes what deciding it wrote, for a registration that created nobody (its email was taken), in the
   * transaction that records that
   */
  abandon(tx: Tx): Promise<void>
}

/**
 * Attribution seam (spec 4.16): the marketing-attribution module, when the deployment has it, provides
 * this port and decides the customer's attribution (its touches, the install, the body values); without
 * it the public values passed in the body are kept as given.
 */
export type AttributionResolver = (
  brand: Brand,
  input: RegistrationInput,
  meta: { ip: string; cookies: string | null; userAgent: string | null },
) => Promise<RegistrationAttribution>
export const RegistrationAttributionPort = definePort<AttributionResolver>('auth.registration-attribution')

const bodyAttribution: AttributionResolver = async (_brand, input) => ({
  attribution: input.attribution && Object.keys(input.attribution).length ? input.attribution : null,
  abandon: async () => {},
})

/** The same answer whether the email was new or already registered (no enumeration through registration). */
const REGISTRATION_ACCEPTED = {
  status: 'accepted' as const,
  message:
    'Registration accepted. Sign in with POST /customer/sign/in using this email and password. ' +
    'If the email was registered before, its existing password stays in force.',
}

/**
 * POST /customer/register: creates the customer. The answer never tells whether the email existed: both
 * cases hash the password and attempt the insert, and answer the same body; a duplicate only records a
 * `customer.registration_attempted` event (the owner can be told out of band). The client then signs in,
 * which fails for a duplicate exactly as for a wrong password. Limited per client address.
 */
export async function registerCustomer(
  ctx: AuthCtx,
  brand: Brand,
  input: RegistrationInput,
  meta: { ip: string; cookies: string | null; userAgent: string | null },
) {
  await consume(
    ctx.store,
    { name: 'register:ip', max: ctx.settings.registerPerHour, windowMs: 3_600_000 },
    meta.ip,
  )
  if (input.country !== undefined && !isCountryCode(input.country))
    throw refuse('INVALID_DATA', `country: ${input.country} is not an ISO 3166-1 alpha-2 code`)
  const email = input.email.trim().toLowerCase()
  const resolve = ctx.ports.has(RegistrationAttributionPort)
    ? ctx.ports.get(RegistrationAttributionPort)
    : bodyAttribution
  // hashed first: a password refused (its normalized length) or a gate that is full registers nobody, and
  // no attribution decision or touch of it is written
  const passwordHash = await hashPassword(input.password)
  const decided = await resolve(brand, input, meta)
  await ctx.accounts.createCustomer({
    brandId: brand.id,
    email,
    passwordHash,
    name: input.name,
    phone: input.phone,
    country: input.country,
    attribution: decided.attribution,
    // a taken email registers nobody: no decision or touch of it stays (it would count and pin touches)
    onTaken: (tx) =>
      decided.abandon(tx).catch((e) =>
        ctx.logger.log('warn', 'attribution of a refused registration not undone', {
          err: e instanceof Error ? e.message : String(e),
        }),
      ),
  })
  return REGISTRATION_ACCEPTED
}

/** PUT /password (spec 4.2): staff set a trading account's password. */
export async function setAccountPassword(
  ctx: AuthCtx,
  brand: Brand,
  input: { login: number; password: string },
) {
  const passwordHash = await hashPassword(input.password)
  let updated: boolean
  try {
    // a new password ends every session of the account (its tokens carry the old epoch)
    updated = await ctx.accounts.setPasswordHash(brand.id, input.login, passwordHash)
  } catch (e) {
    // a database away or busy is the client's to retry (503); what the database refused is the spec's
    // internal error, named by its cause: drizzle's own message repeats the statement and its parameters,
    // the new password's hash among them
    if (isBusy(e) || isUnreachable(e)) throw e
    throw refuse('UPDATE_PASSWORD_ERROR', `password update failed: ${rootMessage(e)}`)
  }
  if (!updated) throw refuse('UPDATE_PASSWORD_ERROR', `account ${input.login} not found`)
  return { login: 'OK' as const }
}
