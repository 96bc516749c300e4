import { and, count, desc, eq, sql } from 'drizzle-orm'
import { publishTo } from '../../kernel/bus/channel'
import type { Tx } from '../../kernel/db/client'
import { isUniqueViolation } from '../../kernel/db/errors'
import { fromMinor, roundToMinor } from '../accounts'
import type { PropCtx } from './context'
import { ownChallenge } from './customer'
import { FUNDED, ProgramStep } from './domain/program'
import { CHALLENGE, PHASE } from './domain/purchase'
import { afterPayout, localDay } from './domain/rules'
import { refuse } from './errors'
import { PHASES_CHANGED } from './live'
import { propChallenges, propDays, propPayouts, propPhases, propPurchases } from './schema'
import { type Figures, forgetSnapshot, insertDays, type PhaseRow } from './state'

type PayoutRow = typeof propPayouts.$inferSelect

const figures = (balance: number, equity: number, currency: string) => ({
  balance,
  equity: roundToMinor(equity, currency),
})

/**
 * Moves a funded phase's anchors down by a payout, in its transaction (domain/rules.ts afterPayout): the
 * day's row (made now, from the figures before the payout, when no pass or tick made it yet, so that none
 * can make it later from figures read before the payout) and the highest end-of-day balance; and counts
 * the payout on the phase (`payout_count`), so that a pass that read the phase before it raises nothing.
 */
async function movePayoutAnchors(tx: Tx, phase: PhaseRow, paid: number, before: Figures, now: number) {
  const day = localDay(now, phase.timeZone)
  await insertDays(tx, [{ phaseId: phase.id, day, now: before }], now)
  const [row] = await tx
    .select({
      startBalance: propDays.startBalance,
      startEquity: propDays.startEquity,
      minEquity: propDays.minEquity,
    })
    .from(propDays)
    .where(and(eq(propDays.phaseId, phase.id), eq(propDays.day, day)))
  const [held] = await tx
    .select({ initialBalance: propPhases.initialBalance, highestEodBalance: propPhases.highestEodBalance })
    .from(propPhases)
    .where(eq(propPhases.id, phase.id))
  const moved = afterPayout({ ...held!, day: row! }, paid)
  await tx
    .update(propDays)
    .set(moved.day)
    .where(and(eq(propDays.phaseId, phase.id), eq(propDays.day, day)))
  await tx
    .update(propPhases)
    // counted even when the highest stays (floored at the initial balance): a pass that read the phase
    // before this payout raises nothing from its figures (evaluator.ts writeChunk)
    .set({
      highestEodBalance: moved.highestEodBalance,
      payoutCount: sql`${propPhases.payoutCount} + 1`,
      updatedAt: now,
    })
    .where(eq(propPhases.id, phase.id))
}

function payoutView(p: PayoutRow, currency: string) {
  return {
    id: p.id,
    seq: p.seq,
    profit: fromMinor(p.profit, currency),
    share: fromMinor(p.share, currency),
    profit_split: p.splitPpm / 1_000_000,
    payer_login: p.payerLogin,
    funded_login: p.fundedLogin,
    currency,
    created_time: Math.floor(p.createdAt / 1000),
  }
}

/**
 * A funded trader takes the profit: what the funded account's balance holds over its initial balance,
 * less what its open positions have lost, leaves it (OP_BALANCE_OUT, PROP_PAYOUT; refused when it would
 * take the free margin below zero), and the program's split of it reaches the payer account
 * (OP_BALANCE_IN, PROP_PAYOUT_SPLIT), both TR_REASON_PROP, with the payout row, in one transaction.
 * After it the balance is back at the initial balance (or above it by the open positions' loss, which
 * their close takes), so the next payout is the profit since this one.
 */
export async function requestPayout(ctx: PropCtx, brandId: number, customerId: number, challengeId: number) {
  const c = await ownChallenge(ctx, brandId, customerId, challengeId)
  const [phase] = await ctx.db
    .select()
    .from(propPhases)
    .where(and(eq(propPhases.challengeId, c.id), eq(propPhases.phaseIndex, c.currentPhaseIndex)))
  const notFunded = () => refuse('NOT_FUNDED', 'payouts are taken from an active funded phase')
  if (!phase || phase.phaseType !== FUNDED || phase.status !== PHASE.active) throw notFunded()
  const [purchase] = await ctx.db.select().from(propPurchases).where(eq(propPurchases.id, c.purchaseId))
  // the split as bought: a later edit of the program applies to new purchases only
  const split =
    ProgramStep.array()
      .parse(JSON.parse(purchase!.steps))
      .find((s) => s.phase_type === FUNDED)?.profit_split ?? 0
  const noProfit = () =>
    refuse(
      'NO_PROFIT',
      'the funded account holds no profit over its initial balance (open positions at a loss count)',
    )
  if (((await ctx.accounts.read.account(phase.accountLogin))?.balance ?? 0) <= phase.initialBalance)
    throw noProfit()
  try {
    const row = await ctx.uow.run(async (tx, work) => {
      // the phase is judged again where the money moves: a breach (or a pass) that committed since the look
      // above ended it. A conditional update, so it holds against another instance's breach too: from here
      // this transaction writes, and no breach commits before it ends
      const now = ctx.clock.now()
      const [held] = await tx
        .update(propPhases)
        .set({ updatedAt: now })
        .where(
          and(
            eq(propPhases.id, phase.id),
            eq(propPhases.status, PHASE.active),
            sql`exists (select 1 from ${propChallenges} where ${propChallenges.id} = ${c.id}
              and ${propChallenges.status} = ${CHALLENGE.active}
              and ${propChallenges.currentPhaseIndex} = ${phase.phaseIndex})`,
          ),
        )
        .returning({ id: propPhases.id })
      if (!held) throw notFunded()
      // the profit is read where it is taken: two payouts at once cannot both take the same profit (the
      // second finds the balance back at the initial balance). It is the balance's, or the equity's when
      // open positions are at a loss: a hedge whose winning side was closed holds no profit, however much
      // its balance shows
      const { funds, currency, margin } = await ctx.accounts.marginIn(tx, phase.accountLogin)
      // a read-only (or disabled) account is not the trader's to take money from
      if (!funds.tradeAllowed) throw notFunded()
      // (equity less credit: credit is not the trader's result and must not cover a floating loss)
      const equity = roundToMinor(margin.equity - margin.credit, currency)
      const profit = Math.min(funds.balance, equity) - phase.initialBalance
      if (profit <= 0) throw noProfit()
      const share = Math.floor(profit * split)
      const [{ n }] = (await tx
        .select({ n: count() })
        .from(propPayouts)
        .where(eq(propPayouts.phaseId, phase.id))) as [{ n: number }]
      const [p] = await tx
        .insert(propPayouts)
        .values({
          brandId,
          challengeId: c.id,
          phaseId: phase.id,
          seq: n + 1,
          profit,
          share,
          splitPpm: Math.round(split * 1_000_000),
          payerLogin: purchase!.payerLogin,
          fundedLogin: phase.accountLogin,
          createdAt: now,
        })
        .returning()
      const apiData = {
        module: 'prop',
        operation: 'payout',
        payout_id: p!.id,
        challenge_id: c.id,
        customer_id: customerId,
      }
      await ctx.accounts.postOperationTx(tx, work, {
        brandId,
        login: phase.accountLogin,
        op: 'OP_BALANCE_OUT',
        amountMinor: profit,
        reason: 'TR_REASON_PROP',
        comment: 'PROP_PAYOUT',
        apiData,
        idempotencyKey: `prop-payout:${p!.id}:out`,
        createdBy: 'prop',
        // the margin of positions still open stays covered
        keepFreeMargin: true,
      })
      // the payout is no trading loss: the figures the limits are measured from move down with it
      await movePayoutAnchors(tx, phase, profit, figures(funds.balance, margin.equity, currency), now)
      if (share > 0)
        await ctx.accounts.postOperationTx(tx, work, {
          brandId,
          login: purchase!.payerLogin,
          op: 'OP_BALANCE_IN',
          amountMinor: share,
          reason: 'TR_REASON_PROP',
          comment: 'PROP_PAYOUT_SPLIT',
          apiData,
          idempotencyKey: `prop-payout:${p!.id}:in`,
          createdBy: 'prop',
        })
      return p!
    })
    // the engine's watch holds the day's start in memory: it reads the moved anchors again (after the
    // cached snapshot, which still holds the day's start before the payout, is gone)
    await forgetSnapshot(ctx, phase.id, localDay(row.createdAt, phase.timeZone))
    // paid whatever the bus says: a watch that misses it finds the anchors moved where a breach is recorded
    await publishTo(ctx.bus, PHASES_CHANGED, [phase.id]).catch((e) =>
      ctx.logger.log('error', 'prop payout not announced to the engine', { phase: phase.id, err: String(e) }),
    )
    return { payout: payoutView(row, phase.currency) }
  } catch (e) {
    if (isUniqueViolation(e)) throw refuse('PAYOUT_IN_PROGRESS', 'another payout of this phase was just made')
    throw e
  }
}

export async function listPayouts(ctx: PropCtx, brandId: number, customerId: number, challengeId: number) {
  const c = await ownChallenge(ctx, brandId, customerId, challengeId)
  const rows = await ctx.db
    .select()
    .from(propPayouts)
    .where(eq(propPayouts.challengeId, c.id))
    .orderBy(desc(propPayouts.id))
  const [phase] = await ctx.db
    .select({ currency: propPhases.currency })
    .from(propPhases)
    .where(eq(propPhases.challengeId, c.id))
  return { challenge_id: c.id, rows: rows.map((r) => payoutView(r, phase?.currency ?? 'USD')) }
}
