import { and, eq } from 'drizzle-orm'
import { hashPassword, verifyPassword } from '../../kernel/auth/passwords'
import type { Session } from '../../kernel/auth/session'
import type { Brand } from '../../kernel/brand/registry'
import type { AccountsCtx } from './context'
import { setPasswordHash } from './customers'
import { refuse } from './errors'
import { accounts } from './schema'

const notYours = (login: number) => refuse('ACCOUNT_NOT_FOUND', `account ${login} not found`)

/**
 * PUT /customer/accounts/{login}/password: the customer sets the password of an account they own (a lost
 * prop challenge password, a forgotten one). Every session of that account ends; a generated password's
 * must_change_password is cleared. Refused (403 CHANGE_PASSWORD_DISABLED) where staff forbade the account
 * to change its password, as PUT /account/password is.
 */
export async function setOwnAccountPassword(
  ctx: AccountsCtx,
  brand: Brand,
  session: Session,
  login: number,
  password: string,
) {
  const [owned] = await ctx.db
    .select({ allowed: accounts.enableChangePassword, must: accounts.mustChangePassword })
    .from(accounts)
    .where(
      and(
        eq(accounts.login, login),
        eq(accounts.brandId, brand.id),
        eq(accounts.customerId, session.customerId!),
      ),
    )
  if (!owned) throw notYours(login)
  // the same rule as the account's own change: staff may forbid it (enable_change_password 0), unless it must
  if (owned.allowed !== 1 && owned.must !== 1)
    throw refuse('CHANGE_PASSWORD_DISABLED', `account ${login} may not change its password`)
  await setPasswordHash(ctx, brand.id, login, await hashPassword(password))
  return { data: 'OK' as const, sessions_ended: true }
}

/**
 * PUT /account/password: an account changes its own password, proving the current one; open to an
 * account that must replace a generated password. Every session of the account ends, this one too: sign
 * in again with the new password.
 */
export async function changeAccountPassword(
  ctx: AccountsCtx,
  brand: Brand,
  session: Session,
  input: { password: string; new_password: string },
) {
  const [row] = await ctx.db
    .select({
      hash: accounts.passwordHash,
      allowed: accounts.enableChangePassword,
      must: accounts.mustChangePassword,
    })
    .from(accounts)
    .where(and(eq(accounts.login, session.login!), eq(accounts.brandId, brand.id)))
  if (!row) throw notYours(session.login!)
  // staff may forbid an account to change its password (enable_change_password 0), unless it must
  if (row.allowed !== 1 && row.must !== 1)
    throw refuse('CHANGE_PASSWORD_DISABLED', 'this account may not change its password')
  if (!(await verifyPassword(input.password, row.hash)))
    throw refuse('INCORRECT_PASSWORD', 'password: the current password is not correct')
  if (input.new_password === input.password)
    throw refuse('INVALID_DATA', 'new_password: must differ from the current password')
  await setPasswordHash(ctx, brand.id, session.login!, await hashPassword(input.new_password))
  return { data: 'OK' as const, sessions_ended: true }
}
