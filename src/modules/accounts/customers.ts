import { and, eq, sql } from 'drizzle-orm'
import type { Session } from '../../kernel/auth/session'
import type { Brand } from '../../kernel/brand/registry'
import type { Tx } from '../../kernel/db/client'
import { isUniqueViolation } from '../../kernel/db/errors'
import type { AccountsCtx } from './context'
import { refuse } from './errors'
import { CustomerRegistered, CustomerRegistrationAttempted } from './events'
import { accounts, customers } from './schema'

type CustomerRow = typeof customers.$inferSelect

/** Logins of the accounts a customer owns in the brand. */
export async function customerAccounts(ctx: AccountsCtx, brandId: number, customerId: number) {
  const rows = await ctx.db
    .select({ login: accounts.login })
    .from(accounts)
    .where(and(eq(accounts.brandId, brandId), eq(accounts.customerId, customerId)))
    .orderBy(accounts.login)
  return rows.map((r) => r.login)
}

export function customerView(c: Omit<CustomerRow, 'passwordHash'>, logins: number[]) {
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

/** The customer behind an email of the brand, with its password hash (sign-in). */
export async function customerByEmail(ctx: AccountsCtx, brandId: number, email: string) {
  const [row] = await ctx.db
    .select()
    .from(customers)
    .where(and(eq(customers.brandId, brandId), eq(customers.email, email)))
  return row ?? null
}

export async function customerProfile(ctx: AccountsCtx, brand: Brand, session: Session) {
  const row = await ctx.accountsRead.customer(session.customerId!)
  if (!row || row.brandId !== brand.id) throw refuse('CUSTOMER_NOT_FOUND', 'customer not found')
  return customerView(row, await customerAccounts(ctx, brand.id, row.id))
}

export interface NewCustomer {
  brandId: number
  email: string
  passwordHash: string
  name: string
  phone?: string
  country?: string
  attribution: Record<string, string> | null
  /**
   * Undoes what was written for this registration before it (its attribution), in the transaction that
   * records a taken email: no extra round trip tells a taken email from a new one.
   */
  onTaken?: (tx: Tx) => Promise<void>
}

/**
 * Creates a customer; a taken email (unique per brand) creates nothing and records a
 * `customer.registration_attempted` event instead. `created` says which, for the caller to keep to itself.
 */
export async function createCustomer(ctx: AccountsCtx, c: NewCustomer): Promise<{ created: boolean }> {
  try {
    await ctx.uow.run(async (tx, work) => {
      const [row] = await tx
        .insert(customers)
        .values({
          brandId: c.brandId,
          email: c.email,
          passwordHash: c.passwordHash,
          name: c.name,
          phone: c.phone ?? '',
          country: c.country ?? '',
          attribution: c.attribution ? JSON.stringify(c.attribution) : null,
          createdAt: ctx.clock.now(),
        })
        .returning({ id: customers.id })
      work.emit(CustomerRegistered, c.brandId, { customer_id: row.id, attribution: c.attribution })
    })
    return { created: true }
  } catch (e) {
    if (!isUniqueViolation(e)) throw e
    await ctx.uow.run(async (tx, work) => {
      work.emit(CustomerRegistrationAttempted, c.brandId, { email: c.email })
      await c.onTaken?.(tx)
    })
    return { created: false }
  }
}

/** An account of the brand with its password hash (sign-in). */
export async function accountCredentials(ctx: AccountsCtx, brandId: number, login: number) {
  const [row] = await ctx.db
    .select()
    .from(accounts)
    .where(and(eq(accounts.login, login), eq(accounts.brandId, brandId)))
  return row ?? null
}

/**
 * Sets an account's password; every session of it ends (its tokens carry the old epoch). With `from`, only
 * while the stored hash is still that one (the hash a caller proved or read): of two changes racing from
 * one password, the second finds another hash and changes nothing (false).
 */
export async function setPasswordHash(
  ctx: AccountsCtx,
  brandId: number,
  login: number,
  passwordHash: string,
  from?: string,
) {
  const updated = await ctx.uow.run((tx, work) => {
    work.after(`account:${login}`, () => ctx.accountsRead.invalidateAccount(login))
    return tx
      .update(accounts)
      .set({ passwordHash, mustChangePassword: 0, sessionEpoch: sql`${accounts.sessionEpoch} + 1` })
      .where(
        and(
          eq(accounts.login, login),
          eq(accounts.brandId, brandId),
          from === undefined ? undefined : eq(accounts.passwordHash, from),
        ),
      )
      .returning({ login: accounts.login })
  })
  return updated.length > 0
}

/**
 * Ends every session of an account, or of a customer and all its accounts (a customer who fears its
 * credentials were taken): their tokens carry an older epoch from the commit on, on every instance (the
 * principals are read through the shared cache, invalidated after the commit). False when the account or
 * customer is not the brand's.
 */
export async function endSessions(
  ctx: AccountsCtx,
  brandId: number,
  who: { account: number } | { customer: number },
) {
  return ctx.uow.run(async (tx, work) => {
    if ('account' in who) {
      const done = await tx
        .update(accounts)
        .set({ sessionEpoch: sql`${accounts.sessionEpoch} + 1` })
        .where(and(eq(accounts.login, who.account), eq(accounts.brandId, brandId)))
        .returning({ login: accounts.login })
      if (done.length > 0)
        work.after(`account:${who.account}`, () => ctx.accountsRead.invalidateAccount(who.account))
      return done.length > 0
    }
    const [customer] = await tx
      .update(customers)
      .set({ sessionEpoch: sql`${customers.sessionEpoch} + 1` })
      .where(and(eq(customers.id, who.customer), eq(customers.brandId, brandId)))
      .returning({ id: customers.id })
    if (!customer) return false
    const logins = (
      await tx
        .update(accounts)
        .set({ sessionEpoch: sql`${accounts.sessionEpoch} + 1` })
        .where(and(eq(accounts.customerId, who.customer), eq(accounts.brandId, brandId)))
        .returning({ login: accounts.login })
    ).map((a) => a.login)
    work.after(`customer:${who.customer}`, async () => {
      await ctx.accountsRead.invalidateCustomer(who.customer)
      if (logins.length > 0) await ctx.accountsRead.invalidateAccount(...logins)
    })
    return true
  })
}

/**
 * Replaces a password hash made with older parameters by one made now, after a sign-in proved the
 * password: only while the stored hash is still `from` (a password change meanwhile wins), and without
 * ending any session (the password did not change).
 */
export async function upgradePasswordHash(
  ctx: AccountsCtx,
  who: { account: number } | { customer: number },
  from: string,
  to: string,
) {
  if ('account' in who) {
    await ctx.db
      .update(accounts)
      .set({ passwordHash: to })
      .where(and(eq(accounts.login, who.account), eq(accounts.passwordHash, from)))
    ctx.accountsRead.invalidateAccount(who.account)
  } else
    await ctx.db
      .update(customers)
      .set({ passwordHash: to })
      .where(and(eq(customers.id, who.customer), eq(customers.passwordHash, from)))
}
