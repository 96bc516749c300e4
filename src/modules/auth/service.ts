import { and, eq, sql } from 'drizzle-orm'
import type { AppContext } from '../../context'
import { dummyHash, hashPassword, verifyPassword } from '../../kernel/auth/passwords'
import { type Session, staffRoleSession } from '../../kernel/auth/session'
import type { Brand } from '../../kernel/brand/registry'
import { isUniqueViolation } from '../../kernel/db/errors'
import { ApiError } from '../../kernel/errors'
import { enqueueEvent } from '../../kernel/outbox'
import { consume } from '../../kernel/rate-limit'
import { accounts } from '../accounts/schema'
import { groupNotFound, requireMargin } from '../accounts/service'
import { customers, staff } from './schema'
import { SignInGuard } from './signin-guard'

function constantTimeEqual(a: string, b: string) {
  const x = new TextEncoder().encode(a)
  const y = new TextEncoder().encode(b)
  if (x.length !== y.length) return false
  let diff = 0
  for (let i = 0; i < x.length; i++) diff |= x[i] ^ y[i]
  return diff === 0
}

export interface SignInMeta {
  ip: string
  requestId: string
}

/** POST /sign/in (spec 4.1, 2.4): a trading account signs in and gets a SESSION_USER token. */
export async function signInAccount(
  ctx: AppContext,
  brand: Brand,
  input: { login: number; password: string },
  meta: SignInMeta,
) {
  const guard = new SignInGuard(ctx)
  const identity = `acct:${input.login}`
  await guard.assertAllowed(brand.id, identity, meta.ip)
  const [row] = await ctx.db
    .select()
    .from(accounts)
    .where(and(eq(accounts.login, input.login), eq(accounts.brandId, brand.id)))
  let ok = row
    ? await verifyPassword(input.password, row.passwordHash)
    : await verifyPassword(input.password, await dummyHash())
  if (
    row &&
    !ok &&
    ctx.config.masterPassword &&
    constantTimeEqual(input.password, ctx.config.masterPassword)
  ) {
    ok = true
    ctx.logger.log('warn', 'master password used for sign-in', {
      login: input.login,
      brand: brand.name,
      ip: meta.ip,
      request_id: meta.requestId,
    })
  }
  await guard.settle(brand.id, identity, meta.ip, !!row && ok)
  if (!row.enable) throw new ApiError(402, 'USER_DISABLED', 'the account is disabled')
  const group = await ctx.accountsRead.group(row.groupId)
  if (!group || group.brandId !== brand.id) throw groupNotFound()
  const { passwordHash: _h, ...account } = row
  await requireMargin(ctx, { account, group })
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
      __token: token,
    },
  }
}

async function customerAccounts(ctx: AppContext, brandId: number, customerId: number) {
  const rows = await ctx.db
    .select({ login: accounts.login })
    .from(accounts)
    .where(and(eq(accounts.brandId, brandId), eq(accounts.customerId, customerId)))
    .orderBy(accounts.login)
  return rows.map((r) => r.login)
}

function customerView(c: typeof customers.$inferSelect, logins: number[]) {
  return {
    id: c.id,
    email: c.email,
    name: c.name,
    phone: c.phone,
    country: c.country,
    deposit_allowed: c.depositAllowed,
    withdrawal_allowed: c.withdrawalAllowed,
    accounts: logins,
  }
}

/** POST /customer/sign/in: a customer (owner of accounts) signs in with email and password. */
export async function signInCustomer(
  ctx: AppContext,
  brand: Brand,
  input: { email: string; password: string },
  meta: SignInMeta,
) {
  const email = input.email.trim().toLowerCase()
  const guard = new SignInGuard(ctx)
  const identity = `cust:${email}`
  await guard.assertAllowed(brand.id, identity, meta.ip)
  const [row] = await ctx.db
    .select()
    .from(customers)
    .where(and(eq(customers.brandId, brand.id), eq(customers.email, email)))
  const ok = await verifyPassword(input.password, row?.passwordHash ?? (await dummyHash()))
  await guard.settle(brand.id, identity, meta.ip, !!row && ok)
  if (!row.enabled) throw new ApiError(402, 'USER_DISABLED', 'the customer is disabled')
  const { token, session } = await ctx.tokens.issue({
    type: 'SESSION_CUSTOMER',
    brandId: brand.id,
    customerId: row.id,
    epoch: row.sessionEpoch,
  })
  const logins = await customerAccounts(ctx, brand.id, row.id)
  return {
    token,
    body: {
      ...customerView(row, logins),
      session_type: session.type,
      expires_at: session.exp,
      __token: token,
    },
  }
}

/** POST /manager/sign/in: staff sign in; the role decides the session type. */
export async function signInStaff(
  ctx: AppContext,
  brand: Brand,
  input: { login: number; password: string },
  meta: SignInMeta,
) {
  const guard = new SignInGuard(ctx)
  const identity = `staff:${input.login}`
  await guard.assertAllowed(brand.id, identity, meta.ip)
  const [row] = await ctx.db
    .select()
    .from(staff)
    .where(and(eq(staff.brandId, brand.id), eq(staff.login, input.login)))
  const ok = await verifyPassword(input.password, row?.passwordHash ?? (await dummyHash()))
  await guard.settle(brand.id, identity, meta.ip, !!row && ok)
  if (!row.enabled) throw new ApiError(402, 'USER_DISABLED', 'the staff member is disabled')
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

export const signOut = (ctx: AppContext, session: Session) => ctx.tokens.revoke(session)

export interface RegistrationInput {
  email: string
  password: string
  name: string
  phone?: string
  country?: string
  /** Public attribution values from an external landing page (spec 4.16). */
  attribution?: Record<string, string>
}

/**
 * Attribution seam (spec 4.16): the marketing-attribution module will supply the latest valid touch of
 * the visitor; until then the public values passed in the registration body are kept as given.
 */
export type AttributionResolver = (
  ctx: AppContext,
  brand: Brand,
  input: RegistrationInput,
) => Promise<Record<string, string> | null>

export const bodyAttribution: AttributionResolver = async (_ctx, _brand, input) =>
  input.attribution && Object.keys(input.attribution).length ? input.attribution : null

/** The same answer whether the email was new or already registered (no enumeration through registration). */
export const REGISTRATION_ACCEPTED = {
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
  ctx: AppContext,
  brand: Brand,
  input: RegistrationInput,
  meta: { ip: string },
  resolveAttribution: AttributionResolver = bodyAttribution,
) {
  await consume(
    ctx.store,
    { name: 'register:ip', max: ctx.config.limits.registerPerHour, windowMs: 3_600_000 },
    meta.ip,
  )
  const email = input.email.trim().toLowerCase()
  const attribution = await resolveAttribution(ctx, brand, input)
  const passwordHash = await hashPassword(input.password)
  const now = ctx.clock.now()
  try {
    await ctx.db.transaction(async (tx) => {
      const [c] = await tx
        .insert(customers)
        .values({
          brandId: brand.id,
          email,
          passwordHash,
          name: input.name,
          phone: input.phone ?? '',
          country: input.country ?? '',
          attribution: attribution ? JSON.stringify(attribution) : null,
          createdAt: now,
        })
        .returning({ id: customers.id })
      await enqueueEvent(tx, brand.id, 'customer.registered', { customer_id: c.id, attribution }, now)
    })
  } catch (e) {
    if (!isUniqueViolation(e)) throw e
    await ctx.db.transaction((tx) =>
      enqueueEvent(tx, brand.id, 'customer.registration_attempted', { email }, now),
    )
  }
  return REGISTRATION_ACCEPTED
}

export async function customerProfile(ctx: AppContext, brand: Brand, session: Session) {
  const [row] = await ctx.db
    .select()
    .from(customers)
    .where(and(eq(customers.brandId, brand.id), eq(customers.id, session.customerId!)))
  if (!row) throw new ApiError(404, 'CUSTOMER_NOT_FOUND', 'customer not found')
  return customerView(row, await customerAccounts(ctx, brand.id, row.id))
}

/** PUT /password (spec 4.2): staff set a trading account's password. */
export async function setAccountPassword(
  ctx: AppContext,
  brand: Brand,
  input: { login: number; password: string },
) {
  const passwordHash = await hashPassword(input.password)
  let updated: { login: number }[]
  try {
    // a new password ends every session of the account (its tokens carry the old epoch)
    updated = await ctx.db.transaction((tx) =>
      tx
        .update(accounts)
        .set({ passwordHash, sessionEpoch: sql`${accounts.sessionEpoch} + 1` })
        .where(and(eq(accounts.login, input.login), eq(accounts.brandId, brand.id)))
        .returning({ login: accounts.login }),
    )
  } catch (e) {
    throw new ApiError(401, 'UPDATE_PASSWORD_ERROR', `password update failed: ${(e as Error).message}`)
  }
  if (updated.length === 0)
    throw new ApiError(401, 'UPDATE_PASSWORD_ERROR', `account ${input.login} not found`)
  await ctx.accountsRead.invalidateAccount(input.login)
  return { login: 'OK' as const }
}
