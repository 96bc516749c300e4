import type { Queryable } from '../../../kernel/db/client'
import type { UseCase } from '../../../kernel/use-case'
import type { AccountsCtx } from '../context'
import { type MarginSnapshot, marginSnapshot } from '../domain/margin'
import { fromMinor } from '../domain/money'
import { refuse } from '../errors'
import { fundsOf } from '../funds'
import type { GroupRecord } from '../read-model'
import { type AccountView, accountNotFound } from './shared'

/**
 * Live margin figures: the ledger totals plus the exposure of open positions (floating profit, margin,
 * commission and swap at the current quotes), which the trading module provides through the context.
 */
export async function liveMargin({
  ctx,
  input: view,
}: UseCase<AccountsCtx, AccountView>): Promise<MarginSnapshot | null> {
  const cur = view.group.currency
  const e = await ctx.exposure(view.account, view.group)
  if (!e) return null
  return marginSnapshot(
    {
      balance: fromMinor(view.account.balance, cur),
      credit: fromMinor(view.account.credit, cur),
      ...e,
    },
    cur,
  )
}

/** liveMargin, or 400 INVALID_MARGIN_LEVEL when the figures cannot be computed. */
export async function requireMargin({
  ctx,
  input,
}: UseCase<AccountsCtx, AccountView>): Promise<MarginSnapshot> {
  const m = await liveMargin({ ctx, input })
  if (!m) throw refuse('INVALID_MARGIN_LEVEL', 'margin information could not be calculated')
  return m
}

/** 0 normal, 1 margin call reached, 2 stop-out level reached. */
export function levelType(m: MarginSnapshot, group: GroupRecord): number {
  if (m.margin <= 0) return 0
  if (m.margin_level <= group.stopOut) return 2
  if (m.margin_level <= group.marginCall) return 1
  return 0
}

/**
 * The margin figures of a login from its funds and open positions as `q` (a transaction) sees them: what
 * money leaving in that transaction is checked against (a withdrawal's hold, a fee, a prop payout).
 */
export async function marginIn(ctx: AccountsCtx, q: Queryable, login: number) {
  const funds = (await fundsOf(q, [login])).get(login)
  const group = funds && (await ctx.accountsRead.group(funds.groupId))
  if (!funds || !group) throw accountNotFound()
  const currency = group.currency
  const e = await ctx.exposure(funds, group, q)
  const margin =
    e &&
    marginSnapshot(
      { balance: fromMinor(funds.balance, currency), credit: fromMinor(funds.credit, currency), ...e },
      currency,
    )
  if (!margin) throw refuse('INVALID_MARGIN_LEVEL', 'margin information could not be calculated')
  return { funds, currency, margin }
}
