import { and, eq, sql } from 'drizzle-orm'
import type { Tx } from '../../../kernel/db/client'
import type { DeliveredEvent, PayloadOf } from '../../../kernel/events/topic'
import type { BalanceOperation } from '../../accounts'
import type { CopyCtx } from '../context'
import { flowShare, hwmAfterDeposit, hwmAfterWithdrawal, performanceFee } from '../domain/fees'
import { REWARD } from '../domain/rewards'
import { copyMasters, copySubscriptions, liveSubscription } from '../schema'
import { rewardPolicyOf } from '../views'
import { copyEquity } from './equity'
import { accrueTx } from './rewards'

/** Money in or out of a follower account, as its subscriptions take it. */
export interface Flow {
  login: number
  /** The ledger operation that moved the money out (keys the performance fee a withdrawal charges). */
  opId: number
  /** Positive, minor units of the account's currency. */
  amount: number
  out: boolean
  /** The account's balance before the money moved: each subscription's share is its part of it. */
  balanceBefore: number
  /** The subscriptions it moves: the live ones created after `after` and by `until` (epoch ms). */
  after: number
  until: number
  /** A withdrawal still to be paid out: its performance fee is accrued `held`, not owed yet (copier/holds.ts). */
  feeHeld?: boolean
}

/**
 * A balance operation as a flow of the subscriptions live when it was written (a flow before a
 * subscription is in its start balance).
 */
export function flowOf(e: DeliveredEvent<PayloadOf<typeof BalanceOperation>>): Flow {
  const p = e.payload
  return {
    login: p.login,
    opId: p.id,
    amount: Math.abs(p.amount_minor),
    out: p.op !== 'OP_BALANCE_IN',
    balanceBefore: p.balance_after_minor - p.amount_minor,
    after: Number.NEGATIVE_INFINITY,
    until: e.createdAt,
  }
}

/**
 * What a withdrawal moved in one subscription: the capital it took, the mark's fall, the fee it accrued,
 * and the version of the terms it was charged on.
 */
export interface FlowPart {
  sub: number
  part: number
  hwm_delta: number
  reward: number | null
  terms: number
}

/**
 * A flow's effect on the follower's live subscriptions, in the caller's transaction (domain/fees.ts): a
 * deposit raises a subscription's capital and mark by its share; a withdrawal first charges the
 * performance fee due on the gains so far, then lowers the capital by its share and the mark in
 * proportion. The accruals it wrote, to settle after the commit (none held), and what it moved.
 */
export async function applyFlowTx(ctx: CopyCtx, tx: Tx, f: Flow) {
  const subs = await tx
    .select()
    .from(copySubscriptions)
    .where(and(eq(copySubscriptions.followerLogin, f.login), liveSubscription))
  // a flow before the subscription is in its start balance
  const live = subs.filter((sub) => sub.createdAt > f.after && sub.createdAt <= f.until)
  const ids: number[] = []
  const parts: FlowPart[] = []
  for (const sub of live) {
    const part = flowShare(
      f.amount,
      sub.capitalMinor + sub.resultMinor - sub.feesMinor,
      f.balanceBefore,
      live.length,
      f.out,
    )
    if (part <= 0) continue
    if (!f.out) {
      await tx
        .update(copySubscriptions)
        .set({
          capitalMinor: sql`${copySubscriptions.capitalMinor} + ${part}`,
          hwmMinor: sql`${copySubscriptions.hwmMinor} + ${hwmAfterDeposit(0, part)}`,
        })
        .where(eq(copySubscriptions.id, sub.id))
      continue
    }
    // a withdrawal first charges the performance fee due on the gains so far
    // in the delivery's transaction: a fee an earlier flow of this batch accrued is owed already
    const before = await copyEquity(ctx, sub, tx)
    let hwm = sub.hwmMinor
    let fee = 0
    let reward: number | null = null
    const policy = rewardPolicyOf(sub)
    if (policy.reward_type === REWARD.PERFORMANCE_FEE_HWM) {
      const due = performanceFee(before.equity, sub.hwmMinor, policy.percent)
      const [master] = await tx.select().from(copyMasters).where(eq(copyMasters.id, sub.masterId))
      if (master && due.fee > 0) {
        const id = await accrueTx(
          ctx,
          tx,
          sub,
          master,
          {
            key: `hwm:${sub.id}:out:${f.opId}`,
            type: REWARD.PERFORMANCE_FEE_HWM,
            base: before.equity - sub.hwmMinor,
            amount: due.fee,
            currency: before.currency,
            note: `${policy.percent} % of the copy equity ${before.equity} above the mark ${sub.hwmMinor} (withdrawal)`,
          },
          f.feeHeld ? 'held' : 'pending',
        )
        if (id) {
          if (!f.feeHeld) ids.push(id)
          reward = id
          hwm = due.hwm
          fee = due.fee
        }
      }
    }
    // the mark falls in proportion to the equity taken out (after the fee it charged)
    const after = hwmAfterWithdrawal(hwm, before.equity - fee, part)
    await tx
      .update(copySubscriptions)
      .set({ capitalMinor: sub.capitalMinor - part, hwmMinor: after })
      .where(eq(copySubscriptions.id, sub.id))
    parts.push({ sub: sub.id, part, hwm_delta: sub.hwmMinor - after, reward, terms: sub.termsVersion })
  }
  return { ids, parts }
}
