import { and, eq } from 'drizzle-orm'
import { hashPassword, verifyPassword } from '../../kernel/auth/passwords'
import type { Session } from '../../kernel/auth/session'
import { SignInGuard } from '../../kernel/auth/signin-guard'
import type { Brand } from '../../kernel/brand/registry'
import type { AccountsCtx } from './context'
import { setPasswordHash } from './customers'
import { refuse } from './errors'
import { accounts } from './schema'

const notYours = (login: number) => refuse('ACCOUNT_NOT_FOUND', `account ${login} not found`)
const incorrect = () => refuse('INCORRECT_PASSWORD', 'password: the current password is not correct')

/**
 * The identity the sign-in guard counts an account's failed password checks under: POST /sign/in's and
 * PUT /account/password's are one count, so neither is a way around the other's lock.
 */
export const accountSignInIdentity = (login: number) => `acct:${login}`

/**
 * PUT /customer/accounts/{login}/password: the customer sets the password of an account they own (a lost
 * prop challenge password, a forgotten one). Every session of that account ends; a generated password's
 * must_change_password is cleared. Refused (403 CHANGE_PASSWORD_DISABLED) where staff forbade the account
 * to change its password, as PUT /account/password is. The new hash replaces the one read here only:
 * a change that committed meanwhile (a stolen session's) is not silently overwritten, nor overwrites this
 * one (409 PASSWORD_CHANGED, the customer sets it again).
 */
export async function setOwnAccountPassword(
  ctx: AccountsCtx,
  brand: Brand,
  session: Session,
  login: number,
  password: string,
) {
  const [owned] = await ctx.db
    .select({
      hash: accounts.passwordHash,
      allowed: accounts.enableChangePassword,
      must: accounts.mustChangePassword,
    })
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
  if (!(await setPasswordHash(ctx, brand.id, login, await hashPassword(password), owned.hash)))
    throw refuse('PASSWORD_CHANGED', `account ${login}: its password changed meanwhile; set it again`)
  return { data: 'OK' as const, sessions_ended: true }
}

/**
 * PUT /account/password: an account changes its own password, proving the current one; open to an
 * account that must replace a generated password. Every session of the account ends, this one too: sign
 * in again with the new password. The proof goes through the sign-in guard (a stolen session must not
 * guess faster than sign-in lets anyone), and the new hash replaces only the hash proved: of two changes
 * proving one password, or a change racing the customer's reset, one wins and the other answers 403
 * INCORRECT_PASSWORD, the password it proved being no longer the account's.
 */
export async function changeAccountPassword(
  ctx: AccountsCtx,
  brand: Brand,
  session: Session,
  input: { password: string; new_password: string },
  meta: { ip: string },
) {
  const login = session.login!
  const [row] = await ctx.db
    .select({
      hash: accounts.passwordHash,
      allowed: accounts.enableChangePassword,
      must: accounts.mustChangePassword,
    })
    .from(accounts)
    .where(and(eq(accounts.login, login), eq(accounts.brandId, brand.id)))
  if (!row) throw notYours(login)
  // staff may forbid an account to change its password (enable_change_password 0), unless it must
  if (row.allowed !== 1 && row.must !== 1)
    throw refuse('CHANGE_PASSWORD_DISABLED', 'this account may not change its password')
  await new SignInGuard(ctx, 'auth', incorrect).attempt(
    brand.id,
    accountSignInIdentity(login),
    meta.ip,
    async () => ({ ok: await verifyPassword(input.password, row.hash) }),
  )
  // as hashed (NFKC): the same password in other code points (full-width, decomposed) is the same one
  if (input.new_password.normalize('NFKC') === input.password.normalize('NFKC'))
    throw refuse('INVALID_DATA', 'new_password: must differ from the current password')
  if (
    !(await setPasswordHash(
      ctx,
      brand.id,
      login,
      await hashPassword(input.new_password, 'new_password'),
      row.hash,
    ))
  )
    throw incorrect()
  return { data: 'OK' as const, sessions_ended: true }
}
