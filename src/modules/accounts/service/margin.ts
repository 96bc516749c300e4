import type { UseCase } from '../../../kernel/use-case'
import type { AccountsCtx } from '../context'
import { type MarginSnapshot, marginSnapshot } from '../domain/margin'
import { fromMinor } from '../domain/money'
import { refuse } from '../errors'
import type { GroupRecord } from '../read-model'
import type { AccountView } from './shared'

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
