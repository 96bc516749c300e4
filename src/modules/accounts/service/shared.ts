import { and, eq } from 'drizzle-orm'
import type { Session } from '../../../kernel/auth/session'
import type { Brand } from '../../../kernel/brand/registry'
import { invalid } from '../../../kernel/http/errors'
import type { AccountsCtx } from '../context'
import { accountScope } from '../domain/access'
import { refuse } from '../errors'
import type { AccountRecord, GroupRecord } from '../read-model'
import { accounts } from '../schema'

export const accountNotFound = () => refuse('ACCOUNT_NOT_FOUND', 'account not found')

export const groupNotFound = () => refuse('GROUP_NOT_FOUND', 'the account group does not exist')

/** Who asks for which account: the brand, the session and the login it names (none: its only account). */
export interface SessionScope {
  brand: Brand
  session: Session
}

export interface AccountView {
  account: AccountRecord
  group: GroupRecord
}

/**
 * The account a session asked for, scoped by brand and owner (DESIGN rule 5). Another customer's or
 * another brand's account answers exactly like a missing one.
 */
export async function findScopedAccount(
  ctx: AccountsCtx,
  brand: Brand,
  session: Session,
  login: number | undefined,
): Promise<AccountRecord> {
  const scope = accountScope(session, login)
  if (scope.kind === 'invalid') throw invalid(scope.message)
  if (scope.kind === 'hidden') throw accountNotFound()
  if (scope.kind === 'only-account-of-customer') {
    const owned = await ctx.db
      .select({ login: accounts.login })
      .from(accounts)
      .where(and(eq(accounts.brandId, brand.id), eq(accounts.customerId, scope.customerId)))
      .limit(2)
    if (owned.length > 1) throw invalid('login: required when the customer has several accounts')
    if (owned.length === 0) throw accountNotFound()
    return findScopedAccount(ctx, brand, session, owned[0].login)
  }
  // a user session's own account was read by the route guard for this request
  const own = session.type === 'SESSION_USER' && scope.login === session.login
  const account = own
    ? ((session.principal as AccountRecord | undefined) ?? (await ctx.accountsRead.account(scope.login)))
    : await ctx.accountsRead.account(scope.login)
  // The read model is keyed by login only; the brand and owner predicate is applied to every row it returns.
  if (!account || account.brandId !== brand.id) throw accountNotFound()
  if (scope.customerId !== undefined && account.customerId !== scope.customerId) throw accountNotFound()
  return account
}
