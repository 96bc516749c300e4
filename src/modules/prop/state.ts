import { and, eq, inArray, sql } from 'drizzle-orm'
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
  const cached = await ctx.store.get(snapshotKey(phaseId, day)).catch(() => null)
  if (cached) return JSON.parse(cached) as Figures
  return (await daySnapshots(ctx, [{ phaseId, day, now }])).get(phaseId)!
}

/** `daySnapshot` for many phases at once (the evaluator's pass): one insert and one read for all. */
export async function daySnapshots(ctx: PropCtx, wanted: { phaseId: number; day: string; now: Figures }[]) {
  const out = new Map<number, Figures>()
  if (wanted.length === 0) return out
  const proposed = await Promise.all(
    wanted.map(async (w) => {
      const key = snapshotKey(w.phaseId, w.day)
      if (await ctx.store.setNX(key, JSON.stringify(w.now), SNAPSHOT_TTL_MS).catch(() => false)) return w.now
      const held = await ctx.store.get(key).catch(() => null)
      return held ? (JSON.parse(held) as Figures) : w.now
    }),
  )
  const createdAt = ctx.clock.now()
  const rows = wanted.map((w, i) => ({
    phaseId: w.phaseId,
    day: w.day,
    startBalance: proposed[i]!.balance,
    startEquity: proposed[i]!.equity,
    minEquity: proposed[i]!.equity,
    createdAt,
  }))
  await ctx.db.transaction(async (tx) => {
    for (let i = 0; i < rows.length; i += 500)
      await tx
        .insert(propDays)
        .values(rows.slice(i, i + 500))
        .onConflictDoNothing()
  })
  // the durable rows decide (the cache may have been emptied, e.g. an embedded restart)
  const days = new Map(wanted.map((w) => [w.phaseId, w.day]))
  const stored = await ctx.db
    .select({
      phaseId: propDays.phaseId,
      day: propDays.day,
      balance: propDays.startBalance,
      equity: propDays.startEquity,
    })
    .from(propDays)
    .where(
      and(
        sql`${propDays.phaseId} in (select value from json_each(${JSON.stringify([...days.keys()])}))`,
        inArray(propDays.day, [...new Set(days.values())]),
      ),
    )
  for (const r of stored)
    if (days.get(r.phaseId) === r.day) out.set(r.phaseId, { balance: r.balance, equity: r.equity })
  await Promise.all(
    wanted.map((w, i) => {
      const truth = out.get(w.phaseId)
      return truth && truth.equity !== proposed[i]!.equity
        ? ctx.store.set(snapshotKey(w.phaseId, w.day), JSON.stringify(truth), SNAPSHOT_TTL_MS).catch(() => {})
        : null
    }),
  )
  return out
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
    await ctx.accounts.setReadOnlyTx(
      tx,
      work,
      phase.brandId,
      phase.accountLogin,
      `challenge ${phase.challengeId} failed: phase ${phase.phaseIndex} breached its ${breach.rule} limit (breach ${b.id})`,
    )
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
