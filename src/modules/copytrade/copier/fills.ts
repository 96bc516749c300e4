import { eq, sql } from 'drizzle-orm'
import { currencyDecimals } from '../../accounts'
import { conversionRate } from '../../market'
import { accountOf } from '../accounts-of'
import type { CopyCtx } from '../context'
import { REWARD, volumeRebate } from '../domain/rewards'
import { copyLinks, copyMasters, copyRecords, copySubscriptions } from '../schema'
import { rewardPolicyOf } from '../views'
import { accrueTx } from './rewards'

type Link = typeof copyLinks.$inferSelect
type Sub = typeof copySubscriptions.$inferSelect
/** A copy that became a position: its link, subscription and volume. */
export interface Copied {
  link: Link
  sub: Sub
  volume?: number
}

/** A copy of a master's pending order: a position only once it fills. */
export const isPending = (l: Pick<Link, 'masterCmd'>) => l.masterCmd > 1
export const filledState = (state: string | undefined) => state === 'open' || state === 'closed'

export type CopyTx = Parameters<Parameters<CopyCtx['uow']['run']>[0]>[0]

/** The `fill` record of a pending copy that filled: true when this call wrote it (it counts once). */
export async function fillRecordTx(ctx: CopyCtx, tx: CopyTx, link: Link, sub: Sub) {
  const now = ctx.clock.now()
  const made = await tx
    .insert(copyRecords)
    .values({
      key: `fill:${link.id}`,
      brandId: link.brandId,
      subscriptionId: sub.id,
      linkId: link.id,
      action: 'fill',
      result: 'copied',
      reason: '',
      message: "the copy's pending order filled",
      symbol: link.symbol,
      masterTicket: link.masterTicket,
      masterPrice: link.masterPrice,
      masterTime: link.masterTime,
      decidedAt: now,
      followerTicket: link.followerTicket,
      volume: link.followerVolume ?? 0,
      createdAt: now,
    })
    .onConflictDoNothing()
    .returning({ id: copyRecords.id })
  return made.length > 0
}

/**
 * A follower's pending copy filled (its `trade.activated`): what a copy counts as a position (the
 * master's copied volume, a VOLUME_REBATE accrual) counts now, once. A pending copy cancelled or expired
 * unfilled owes nothing. The accrual's id, to settle after the commit.
 */
export async function copyFilledTx(ctx: CopyCtx, tx: CopyTx, ticket: number, volume: number) {
  const [row] = await tx
    .select({ link: copyLinks, sub: copySubscriptions })
    .from(copyLinks)
    .innerJoin(copySubscriptions, eq(copySubscriptions.id, copyLinks.subscriptionId))
    .where(eq(copyLinks.followerTicket, ticket))
  // a link being closed (its subscription ended, or a pause cancelling it) counts nothing now; one a
  // pause found filled goes back to open and counts then (close-copy.ts)
  if (!row || !isPending(row.link) || row.link.status !== 'open') return []
  if (!(await fillRecordTx(ctx, tx, row.link, row.sub))) return []
  return countCopiesTx(ctx, tx, [{ link: row.link, sub: row.sub, volume }])
}

/** Copies now positions: their masters' copied volume, and the rebates their accepted terms owe (ids). */
export async function countCopiesTx(ctx: CopyCtx, tx: CopyTx, copies: Copied[]) {
  const rebates: number[] = []
  const copiedVolume = new Map<number, number>()
  for (const o of copies)
    copiedVolume.set(o.sub.masterId, (copiedVolume.get(o.sub.masterId) ?? 0) + o.volume!)
  for (const [masterId, v] of copiedVolume) {
    const [m] = await tx
      .update(copyMasters)
      .set({ copiedVolume: sql`${copyMasters.copiedVolume} + ${v}` })
      .where(eq(copyMasters.id, masterId))
      .returning()
    if (!m) continue
    // the subscriptions whose accepted terms are a rebate
    for (const o of copies) {
      if (o.sub.masterId !== masterId || o.sub.rewardType !== REWARD.VOLUME_REBATE) continue
      const id = await accrueRebateTx(ctx, tx, m, o)
      if (id) rebates.push(id)
    }
  }
  return rebates
}

/** VOLUME_REBATE: per lot copied, accrued once per link (its key). */
async function accrueRebateTx(ctx: CopyCtx, tx: CopyTx, m: typeof copyMasters.$inferSelect, o: Copied) {
  const policy = rewardPolicyOf(o.sub)
  if (policy.reward_type !== REWARD.VOLUME_REBATE || policy.per_lot <= 0) return null
  const { group } = await accountOf(ctx, o.link.followerLogin)
  if (!group) return null
  const rate = conversionRate(m.currency, group.currency, await ctx.market.quoteLookup())
  if (rate === null) return null
  const amount = volumeRebate(o.volume!, policy.per_lot, rate, currencyDecimals(group.currency))
  if (amount <= 0) return null
  return accrueTx(ctx, tx, o.sub, m, {
    key: `rebate:${o.link.id}`,
    type: REWARD.VOLUME_REBATE,
    base: o.volume!,
    amount,
    currency: group.currency,
    note: `${o.volume! / 100} lots x ${policy.per_lot} ${m.currency}`,
  })
}
