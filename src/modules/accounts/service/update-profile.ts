import { and, eq, ne } from 'drizzle-orm'
import { epochSeconds } from '../../../kernel/clock'
import type { Queryable } from '../../../kernel/db/client'
import { invalid } from '../../../kernel/http/errors'
import type { UseCase } from '../../../kernel/use-case'
import type { AccountsCtx } from '../context'
import { accounts } from '../schema'
import { accountNotFound, findScopedAccount, type SessionScope } from './shared'

export interface ProfileUpdate {
  login?: number
  name?: string
  avatar?: string
  phone?: string
  address?: string
  city?: string
  state?: string
  country?: string
  zipcode?: string
  user_color?: string
}

/** PUT /account/me: the fields sent, on the account the session names (`login`) or its only one. */
export async function updateProfile({
  ctx,
  brand,
  session,
  input,
}: UseCase<AccountsCtx, ProfileUpdate, SessionScope>) {
  const account = await findScopedAccount(ctx, brand, session, input.login)
  if (input.avatar && !(await ctx.uploads.avatarBelongs(ctx.db, brand, session, account.login, input.avatar)))
    throw invalid('avatar: not an account_avatar upload of this account')
  const now = epochSeconds(ctx.clock.now())
  const fields = {
    name: input.name,
    avatar: input.avatar,
    phone: input.phone,
    address: input.address,
    city: input.city,
    state: input.state,
    country: input.country,
    zipcode: input.zipcode,
    userColor: input.user_color,
  }
  const set = Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined))
  const [row] = await ctx.uow.run(async (tx, work) => {
    work.after(`account:${account.login}`, () => ctx.accountsRead.invalidateAccount(account.login))
    const mine = and(eq(accounts.login, account.login), eq(accounts.brandId, brand.id))
    // the avatar it had, read in the transaction: the one this change replaces
    const [before] =
      input.avatar === undefined
        ? []
        : await tx.select({ avatar: accounts.avatar }).from(accounts).where(mine)
    const updated = await tx
      .update(accounts)
      .set({ ...set, updateTime: now })
      .where(mine)
      .returning()
    if (before && updated[0] && input.avatar !== before.avatar)
      await swapAvatar(ctx, tx, brand.id, account.login, before.avatar, input.avatar!)
    return updated
  })
  if (!row) throw accountNotFound()
  return {
    login: row.login,
    avatar: row.avatar,
    name: row.name,
    phone: row.phone,
    address: row.address,
    city: row.city,
    state: row.state,
    country: row.country,
    zipcode: row.zipcode,
    user_color: row.userColor,
    update_time: row.updateTime,
  }
}

/**
 * An account's avatar changed from `old` to `next` ('' for none), in the change's transaction: uploads
 * marks the new one used (swept since it was checked: 400 as a foreign one, nothing written) and the old
 * one released, unless another account of the brand still shows it (a customer's or a staff member's
 * upload may be several accounts' avatar); the uploads sweep removes it a day later.
 */
async function swapAvatar(
  ctx: AccountsCtx,
  tx: Queryable,
  brandId: number,
  login: number,
  old: string,
  next: string,
) {
  if (next && !(await ctx.uploads.attach(tx, brandId, next)))
    throw invalid('avatar: not an account_avatar upload of this account')
  if (!old) return
  const [other] = await tx
    .select({ login: accounts.login })
    .from(accounts)
    .where(and(eq(accounts.brandId, brandId), eq(accounts.avatar, old), ne(accounts.login, login)))
    .limit(1)
  if (!other) await ctx.uploads.release(tx, brandId, old)
}
