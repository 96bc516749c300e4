import { and, eq } from 'drizzle-orm'
import { epochSeconds } from '../../../kernel/clock'
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
  const [row] = await ctx.uow.run((tx, work) => {
    work.after(`account:${account.login}`, () => ctx.accountsRead.invalidateAccount(account.login))
    return tx
      .update(accounts)
      .set({ ...set, updateTime: now })
      .where(and(eq(accounts.login, account.login), eq(accounts.brandId, brand.id)))
      .returning()
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
