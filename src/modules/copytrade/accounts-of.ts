import type { CopyCtx } from './context'

/** An account and its group through accounts' read model (the shared cache); nulls when absent. */
export async function accountOf(ctx: CopyCtx, login: number) {
  const account = await ctx.accounts.read.account(login)
  const group = account ? await ctx.accounts.read.group(account.groupId) : null
  return { account, group }
}

/** The currency of an account's group, or `fallback` when the account or group is gone. */
export const currencyOf = async (ctx: CopyCtx, login: number, fallback: string) =>
  (await accountOf(ctx, login)).group?.currency ?? fallback
