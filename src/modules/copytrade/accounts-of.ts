import type { GroupRecord } from '../accounts'
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

/**
 * The group of each login of a page of rows (null when the account or group is gone): the logins' groups in
 * one read (accounts' port), then each distinct group once through the shared cache. A list never reads
 * one account per row: at the edge each read is a subrequest (1,000 a Worker invocation).
 */
export async function groupsOf(
  ctx: CopyCtx,
  logins: readonly number[],
): Promise<Map<number, GroupRecord | null>> {
  const unique = [...new Set(logins)]
  if (unique.length === 0) return new Map()
  const groupIds = await ctx.accounts.groupIdsOf(ctx.db, unique)
  const groups = new Map<number, GroupRecord | null>()
  await Promise.all(
    [...new Set(groupIds.values())].map(async (id) => groups.set(id, await ctx.accounts.read.group(id))),
  )
  return new Map(
    unique.map((login) => {
      const id = groupIds.get(login)
      return [login, id === undefined ? null : (groups.get(id) ?? null)] as const
    }),
  )
}

/** The currency of each login's group, or `fallback` (groupsOf). */
export async function currenciesOf(ctx: CopyCtx, logins: readonly number[], fallback: string) {
  const groups = await groupsOf(ctx, logins)
  return (login: number) => groups.get(login)?.currency ?? fallback
}
