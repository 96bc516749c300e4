import { isRefused } from '../../../kernel/http/errors'
import type { UseCase } from '../../../kernel/use-case'
import type { AccountsCtx } from '../context'
import { type AccountView, findScopedAccount, groupNotFound, type SessionScope } from './shared'

/** The account a session asks for (`login`), scoped by brand and owner, with its group. */
export async function loadAccountView({
  ctx,
  brand,
  session,
  login,
}: UseCase<AccountsCtx, undefined, SessionScope & { login: number | undefined }>): Promise<AccountView> {
  const account = await findScopedAccount(ctx, brand, session, login)
  const group = await ctx.accountsRead.groupIn(brand.id, account.groupId)
  if (!group) throw groupNotFound()
  return { account, group }
}

/**
 * loadAccountView for routes whose spec names another code than ACCOUNT_NOT_FOUND for a login the session
 * may not see (trading: USER_NOT_FOUND, market: USER_NOT_FOUND_OR_INCORRECT); the scoping is the same.
 */
export async function loadAccountViewAs(
  args: UseCase<AccountsCtx, undefined, SessionScope & { login: number; notFound: () => Error }>,
): Promise<AccountView> {
  try {
    // the same object: no second one on a trade's path
    return await loadAccountView(args)
  } catch (e) {
    if (isRefused(e) && e.code === 'ACCOUNT_NOT_FOUND') throw args.notFound()
    throw e
  }
}
