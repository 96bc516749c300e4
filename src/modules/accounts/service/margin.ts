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
 * Margin figures: the ledger totals plus the exposure of open positions (floating profit, margin,
 * commission and swap at the current quotes), which the trading module provides through the context;
 * with `q`, the positions that transaction sees.
 */
async function figures(
  ctx: AccountsCtx,
  account: { login: number; leverage: number; balance: number; credit: number },
  group: GroupRecord,
  q?: Queryable,
): Promise<MarginSnapshot | null> {
  const cur = group.currency
  const e = await ctx.exposure(account, group, q)
  if (!e) return null
  return marginSnapshot(
    { balance: fromMinor(account.balance, cur), credit: fromMinor(account.credit, cur), ...e },
    cur,
  )
}

const noFigures = () => refuse('INVALID_MARGIN_LEVEL', 'margin information could not be calculated')

/** Live margin figures of an account (its cached read model's positions). */
export function liveMargin({ ctx, input: view }: UseCase<AccountsCtx, AccountView>) {
  return figures(ctx, view.account, view.group)
}

/** liveMargin, or 400 INVALID_MARGIN_LEVEL when the figures cannot be computed. */
export async function requireMargin({
  ctx,
  input,
}: UseCase<AccountsCtx, AccountView>): Promise<MarginSnapshot> {
  const m = await liveMargin({ ctx, input })
  if (!m) throw noFigures()
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
  const margin = await figures(ctx, funds, group, q)
  if (!margin) throw noFigures()
  return { funds, currency: group.currency, margin }
}
