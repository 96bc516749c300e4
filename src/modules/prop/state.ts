import { and, eq } from 'drizzle-orm'
import { fromMinor, roundToMinor } from '../accounts'
import type { PropCtx } from './context'
import { CHALLENGE, PHASE } from './domain/purchase'
import type { Breach } from './domain/rules'
import { PropBreached } from './events'
import { propBreaches, propChallenges, propDays, propPhases } from './schema'

export type PhaseRow = typeof propPhases.$inferSelect
export interface Figures {
  balance: number
  equity: number
}

const snapshotKey = (phaseId: number, day: string) => `prop:day:v1:${phaseId}:${day}`
const SNAPSHOT_TTL_MS = 3 * 86_400_000

/**
 * The day's start snapshot of a phase: created by the first pass of the program's local day (a tick on
 * the engine or the evaluator), create-if-absent in the shared cache (SET NX) and in `prop_days`
 * (insert or nothing); whoever comes second, or a restarted evaluator, reads the one that exists.
 */
export async function daySnapshot(ctx: PropCtx, phaseId: number, day: string, now: Figures) {
  const key = snapshotKey(phaseId, day)
  const cached = await ctx.store.get(key).catch(() => null)
  if (cached) return JSON.parse(cached) as Figures
  const value = JSON.stringify(now)
  const first = await ctx.store.setNX(key, value, SNAPSHOT_TTL_MS).catch(() => false)
  const proposed = first
    ? now
    : ((JSON.parse((await ctx.store.get(key).catch(() => null)) ?? value) as Figures) ?? now)
  await ctx.db
    .insert(propDays)
    .values({
      phaseId,
      day,
      startBalance: proposed.balance,
      startEquity: proposed.equity,
      minEquity: proposed.equity,
      createdAt: ctx.clock.now(),
    })
    .onConflictDoNothing()
  // the durable row decides (the cache may have been emptied, e.g. an embedded restart)
  const [row] = await ctx.db
    .select({ balance: propDays.startBalance, equity: propDays.startEquity })
    .from(propDays)
    .where(and(eq(propDays.phaseId, phaseId), eq(propDays.day, day)))
  const truth = row ?? proposed
  if (!first || truth.equity !== proposed.equity)
    await ctx.store.set(key, JSON.stringify(truth), SNAPSHOT_TTL_MS)
  return truth
}

/** Balance and equity of an account now (minor units), floating profit included; null without a price. */
export async function figuresOf(ctx: PropCtx, login: number): Promise<Figures | null> {
  const account = await ctx.accounts.read.account(login)
  const group = account && (await ctx.accounts.read.group(account.groupId))
  if (!account || !group) return null
  try {
    const m = await ctx.accounts.requireMargin({ account, group })
    return { balance: account.balance, equity: roundToMinor(m.equity, group.currency) }
  } catch {
    return null
  }
}

/**
 * Ends a phase on a breach, once: the breach row (unique per phase) decides who records it; then the phase
 * and the challenge fail, trading is disabled on the account, and `prop.breached` is emitted, all in one
 * transaction. The engine closes the positions right after (or on its next look, after a crash).
 */
export async function recordBreach(
  ctx: PropCtx,
  phase: Pick<PhaseRow, 'id' | 'brandId' | 'challengeId' | 'accountLogin' | 'phaseIndex' | 'currency'>,
  breach: Breach,
  figures: Figures,
  tickTime: number,
) {
  return ctx.uow.run(async (tx, work) => {
    const now = ctx.clock.now()
    const [b] = await tx
      .insert(propBreaches)
      .values({
        brandId: phase.brandId,
        phaseId: phase.id,
        challengeId: phase.challengeId,
        rule: breach.rule,
        limitValue: breach.limit,
        anchor: breach.anchor,
        observed: breach.observed,
        tickTime,
        detectedAt: now,
      })
      .onConflictDoNothing()
      .returning({ id: propBreaches.id })
    if (!b) return false
    await tx
      .update(propPhases)
      .set({
        status: PHASE.failed,
        finalBalance: figures.balance,
        finalEquity: figures.equity,
        endTime: now,
        updatedAt: now,
      })
      .where(and(eq(propPhases.id, phase.id), eq(propPhases.status, PHASE.active)))
    await tx
      .update(propChallenges)
      .set({ status: CHALLENGE.failed, endTime: now, updatedAt: now })
      .where(and(eq(propChallenges.id, phase.challengeId), eq(propChallenges.status, CHALLENGE.active)))
    await ctx.accounts.setReadOnlyTx(tx, work, phase.brandId, phase.accountLogin)
    const money = (x: number) => fromMinor(x, phase.currency)
    work.emit(PropBreached, phase.brandId, {
      login: phase.accountLogin,
      challenge_id: phase.challengeId,
      phase_id: phase.id,
      phase_index: phase.phaseIndex,
      currency: phase.currency,
      rule: breach.rule,
      limit: breach.rule === 'max_trading_days' ? breach.limit : money(breach.limit),
      anchor: money(breach.anchor),
      observed: money(breach.observed),
    })
    return true
  })
}
