import { and, eq, inArray, sql } from 'drizzle-orm'
import type { Tx } from '../../../kernel/db/client'
import type { Consumer, PayloadOf } from '../../../kernel/events/topic'
import { undeliveredEvents } from '../../../kernel/events/undelivered'
import { BalanceOperation } from '../../accounts'
import { WithdrawalPaid } from '../../cashier'
import type { CopyCtx } from '../context'
import { copyHolds, copyRewards, copySubscriptions, liveSubscription } from '../schema'
import { applyFlowTx, type Flow, type FlowPart } from './flows'
import { settleAfterDelivery } from './rewards'

/** A hold's outcome as its event says: for a return, the balance before it and the amount returned. */
type Outcome = {
  outcome: 'paid' | 'returned'
  outcomeBalanceBeforeMinor: number | null
  outcomeAt: number
  amountMinor: number | null
}

const NO_IDS: number[] = []
/** Copy trading's consumer of balance operations (fees.ts), which takes the hold. */
export const FLOW_CONSUMER = 'copytrade.capital-flow'

/**
 * Money held for a withdrawal still to be decided (the cashier's hold) leaves the subscriptions at once,
 * as a withdrawal does: their capital and mark fall by their shares, so nothing sizes copies, charges a
 * fee or is allocated on money the account no longer has. The performance fee the withdrawal charges on
 * the gains so far waits with it (accrued `held`, counted as owed, not paid): paid out, the withdrawal
 * owes it; rejected or failed, the withdrawal never happened, so its fee is cancelled and what the hold
 * moved is put back (the capital, and the mark by the fall the hold made), unless the subscription ended
 * or switched terms meanwhile (those settled its gains on the terms then: the fee stays owed, the capital
 * comes back as money). A subscription that started while the money was held had a start balance
 * without it: the money returned is new to it, as a deposit. The hold and its outcome are two events
 * that may be delivered in either order: the outcome that comes first is kept, and the hold then applies
 * it at once. `flow` is the hold as a withdrawal (flows.ts: flowOf). The accruals to settle after the
 * commit.
 */
export async function holdTakenTx(ctx: CopyCtx, tx: Tx, flow: Flow, ref: string) {
  const [decided] = await tx.select().from(copyHolds).where(eq(copyHolds.ref, ref))
  if (decided) {
    await tx.delete(copyHolds).where(eq(copyHolds.ref, ref))
    // paid out already: an ordinary withdrawal
    if (decided.outcome === 'paid') return (await applyFlowTx(ctx, tx, flow)).ids
    // returned already: nothing left, but to those that started while it was held it is new money
    return returnedTo(ctx, tx, flow.login, flow.amount, flow.until, decided)
  }
  const moved = await applyFlowTx(ctx, tx, { ...flow, feeHeld: true })
  // a plain insert: an outcome written meanwhile by another instance fails this delivery, whose retry
  // then finds it
  await tx.insert(copyHolds).values({
    ref,
    login: flow.login,
    amountMinor: flow.amount,
    heldAt: flow.until,
    parts: JSON.stringify(moved.parts),
  })
  return moved.ids
}

/** The hold's outcome (its return to the balance, or its payout): see `holdTakenTx`. */
export async function holdDecidedTx(ctx: CopyCtx, tx: Tx, ref: string, login: number, o: Outcome) {
  const [held] = await tx.select().from(copyHolds).where(eq(copyHolds.ref, ref))
  if (!held) {
    if (await holdToCome(tx, login, ref)) {
      const { amountMinor: _, ...outcome } = o
      await tx.insert(copyHolds).values({ ref, login, ...outcome })
      return NO_IDS
    }
    // the hold was taken as an ordinary withdrawal (by an instance of a version before holds were named):
    // its return is an ordinary deposit, its payout nothing more
    return o.outcome === 'paid'
      ? NO_IDS
      : returnedTo(ctx, tx, login, o.amountMinor!, Number.NEGATIVE_INFINITY, o)
  }
  await tx.delete(copyHolds).where(eq(copyHolds.ref, ref))
  const parts = JSON.parse(held.parts ?? '[]') as FlowPart[]
  if (o.outcome === 'paid') return owe(tx, parts)
  const owed = await owe(tx, await undoTx(tx, parts))
  return [...owed, ...(await returnedTo(ctx, tx, login, held.amountMinor!, held.heldAt!, o))]
}

/** The fees these parts of a hold accrued. */
const feesOf = (parts: FlowPart[]) => parts.flatMap((x) => (x.reward === null ? [] : [x.reward]))

/**
 * A returned hold undone: a subscription still on the terms it was charged on gets back what the hold
 * moved, and its fee is cancelled. One that ended, or switched terms, since had its gains settled on the
 * terms then (the end's fee, the switch's close of the old terms: both found the mark the hold had moved
 * and the fee owed): its fee stays owed, and a live one gets its capital back as money, the mark rising
 * with it. The parts whose fee stays owed.
 */
async function undoTx(tx: Tx, parts: FlowPart[]) {
  if (parts.length === 0) return parts
  const live = await tx
    .select({ id: copySubscriptions.id, terms: copySubscriptions.termsVersion })
    .from(copySubscriptions)
    .where(
      and(
        inArray(
          copySubscriptions.id,
          parts.map((x) => x.sub),
        ),
        liveSubscription,
      ),
    )
  const terms = new Map(live.map((x) => [x.id, x.terms]))
  const settledSince = parts.filter((x) => terms.get(x.sub) !== x.terms)
  const cancelled = feesOf(parts.filter((x) => terms.get(x.sub) === x.terms))
  if (cancelled.length > 0)
    await tx
      .update(copyRewards)
      .set({
        status: 'cancelled',
        note: sql`${copyRewards.note} || ' - cancelled: the withdrawal was returned'`,
      })
      .where(and(inArray(copyRewards.id, cancelled), eq(copyRewards.status, 'held')))
  for (const x of parts) {
    if (!terms.has(x.sub)) continue
    const rise = settledSince.includes(x) && x.reward !== null ? x.part : x.hwm_delta
    await tx
      .update(copySubscriptions)
      .set({
        capitalMinor: sql`${copySubscriptions.capitalMinor} + ${x.part}`,
        hwmMinor: sql`max(0, ${copySubscriptions.hwmMinor} + ${rise})`,
      })
      .where(eq(copySubscriptions.id, x.sub))
  }
  return settledSince
}

/** The held fees of these parts, owed now (pending, to settle after the commit). */
async function owe(tx: Tx, parts: FlowPart[]) {
  const fees = feesOf(parts)
  if (fees.length === 0) return NO_IDS
  const owed = await tx
    .update(copyRewards)
    .set({ status: 'pending' })
    .where(and(inArray(copyRewards.id, fees), eq(copyRewards.status, 'held')))
    .returning({ id: copyRewards.id })
  return owed.map((r) => r.id)
}

/** Money returned from a hold, as a deposit of the subscriptions that started after `heldAt`. */
async function returnedTo(
  ctx: CopyCtx,
  tx: Tx,
  login: number,
  amount: number,
  heldAt: number,
  o: { outcomeBalanceBeforeMinor: number | null; outcomeAt: number | null },
) {
  const moved = await applyFlowTx(ctx, tx, {
    login,
    opId: 0,
    amount,
    out: false,
    balanceBefore: o.outcomeBalanceBeforeMinor!,
    after: heldAt,
    until: o.outcomeAt!,
  })
  return moved.ids
}

/**
 * Whether the hold named `ref` is still to come to copy trading's flow consumer: written and not had yet,
 * or parked in dead letters (staff's retry delivers it). Otherwise it was had without a row here: taken as
 * an ordinary withdrawal by an instance of the version before.
 */
async function holdToCome(tx: Tx, login: number, ref: string) {
  const toCome = await undeliveredEvents(tx, {
    consumers: [FLOW_CONSUMER],
    topics: [BalanceOperation.name],
    path: '$.login',
    values: [login],
    also: sql`json_extract(o.payload, '$.hold') = ${ref} and json_extract(o.payload, '$.op') = 'OP_BALANCE_OUT'`,
    parked: true,
    limit: 1,
  })
  return toCome.length > 0
}

/** A held withdrawal paid out (`cashier.withdrawal_paid` naming its hold): see `holdTakenTx`. */
export function withdrawalPaidConsumer(ctx: CopyCtx): Consumer<PayloadOf<typeof WithdrawalPaid>> {
  const settle = settleAfterDelivery(ctx)
  return {
    name: 'copytrade.withdrawal-paid',
    topic: WithdrawalPaid,
    // one held before migration 0035 was a withdrawal when it was held
    accepts: ({ payload: p }) => !!p.hold,
    async handle(e, tx) {
      const ids = await holdDecidedTx(ctx, tx, e.payload.hold!, e.payload.login, {
        outcome: 'paid',
        outcomeBalanceBeforeMinor: null,
        outcomeAt: e.createdAt,
        amountMinor: null,
      })
      settle.keep(e.id, ids)
    },
    after: settle.after,
  }
}
