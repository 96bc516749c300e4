import { eq } from 'drizzle-orm'
import type { Tx } from '../../../kernel/db/client'
import type { Consumer, DeliveredEvent, PayloadOf } from '../../../kernel/events/topic'
import type { BalanceOperation } from '../../accounts'
import { WithdrawalPaid } from '../../cashier'
import type { CopyCtx } from '../context'
import { copyHolds } from '../schema'
import { applyFlowTx } from './flows'
import { settleAfterDelivery } from './rewards'

type Hold = typeof copyHolds.$inferSelect
type Outcome = Pick<Hold, 'outcome' | 'outcomeBalanceBeforeMinor' | 'outcomeAt'>

/**
 * Money held for a withdrawal still to be decided leaves no subscription until it is paid out: a follower
 * who asks for a withdrawal that is then rejected (or whose payout fails) has not taken money out, so
 * nothing was charged for it and nothing of the subscriptions moved (the performance fee of a withdrawal
 * is charged when the money leaves, as a fund's redemption crystallizes its fee when it is dealt, not
 * when it is asked). Paid out, the withdrawal is a flow of the subscriptions that were live when it was
 * held, on the balance before the hold; returned, the money is new only to the subscriptions started
 * while it was held (their start balance did not have it). The hold and its outcome are two events that
 * may be delivered in either order: whichever comes first is kept (one upsert, so two instances meet on
 * one row), and the second resolves and deletes it. The accruals it wrote, to settle after the commit.
 */
export async function holdTakenTx(
  ctx: CopyCtx,
  tx: Tx,
  e: DeliveredEvent<PayloadOf<typeof BalanceOperation>>,
  ref: string,
) {
  const p = e.payload
  const half = {
    heldOp: p.id,
    amountMinor: Math.abs(p.amount_minor),
    balanceBeforeMinor: p.balance_after_minor - p.amount_minor,
    heldAt: e.createdAt,
  }
  const [row] = await tx
    .insert(copyHolds)
    .values({ ref, login: p.login, ...half })
    .onConflictDoUpdate({ target: copyHolds.ref, set: half })
    .returning()
  return resolveTx(ctx, tx, row!)
}

/** The hold's outcome (its return to the balance, or its payout): see `holdTakenTx`. */
export async function holdDecidedTx(ctx: CopyCtx, tx: Tx, ref: string, login: number, half: Outcome) {
  const [row] = await tx
    .insert(copyHolds)
    .values({ ref, login, ...half })
    .onConflictDoUpdate({ target: copyHolds.ref, set: half })
    .returning()
  return resolveTx(ctx, tx, row!)
}

async function resolveTx(ctx: CopyCtx, tx: Tx, h: Hold): Promise<number[]> {
  if (h.heldAt === null || h.outcome === null) return []
  await tx.delete(copyHolds).where(eq(copyHolds.ref, h.ref))
  const held = { login: h.login, opId: h.heldOp!, amount: h.amountMinor! }
  if (h.outcome === 'paid')
    return applyFlowTx(ctx, tx, {
      ...held,
      out: true,
      balanceBefore: h.balanceBeforeMinor!,
      after: Number.NEGATIVE_INFINITY,
      until: h.heldAt,
    })
  return applyFlowTx(ctx, tx, {
    ...held,
    out: false,
    balanceBefore: h.outcomeBalanceBeforeMinor!,
    after: h.heldAt,
    until: h.outcomeAt!,
  })
}

/** A held withdrawal paid out (`cashier.withdrawal_paid` naming its hold): see `holdTakenTx`. */
export function withdrawalPaidConsumer(ctx: CopyCtx): Consumer<PayloadOf<typeof WithdrawalPaid>> {
  const settle = settleAfterDelivery(ctx)
  return {
    name: 'copytrade.withdrawal-paid',
    topic: WithdrawalPaid,
    // one held before migration 0035 was a flow when it was held
    accepts: ({ payload: p }) => !!p.hold,
    async handle(e, tx) {
      const ids = await holdDecidedTx(ctx, tx, e.payload.hold!, e.payload.login, {
        outcome: 'paid',
        outcomeBalanceBeforeMinor: null,
        outcomeAt: e.createdAt,
      })
      settle.keep(e.id, ids)
    },
    after: settle.after,
  }
}
