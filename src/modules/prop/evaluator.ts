import { and, eq, isNull, lt, sql } from 'drizzle-orm'
import { fromMinor } from '../accounts'
import type { TradingApi } from '../trading'
import type { PropCtx } from './context'
import { FUNDED, ProgramStep } from './domain/program'
import { CHALLENGE, PHASE } from './domain/purchase'
import { daysInclusive, localDay, type PhaseRules, PhaseRules as Rules, verdict } from './domain/rules'
import { PropPhasePassed } from './events'
import { PHASES_CHANGED } from './live'
import { propChallenges, propDays, propPhases, propPrograms, propPurchases } from './schema'
import { daySnapshot, figuresOf, type PhaseRow, recordBreach } from './state'

/** Trading days of a phase: local days with a position opened (or opened or closed, per the rules). */
export function tradingDays(
  rules: PhaseRules,
  zone: string,
  positions: { openTime: number; closeTime: number }[],
) {
  const days = new Set<string>()
  for (const p of positions) {
    days.add(localDay(p.openTime, zone))
    if (rules.trading_day === 'any_trade' && p.closeTime > 0) days.add(localDay(p.closeTime, zone))
  }
  return days
}

/**
 * One evaluator pass over every active phase (the `prop.evaluate` job and `POST /cron/prop.evaluate`):
 * the day's snapshot, the previous days' end figures and the highest end-of-day balance, today's metrics
 * row, trading days; then the verdict: a loss limit or the time limit fails the phase, the target with
 * the minimum trading days passes it and opens the next one. Each phase is its own transaction(s).
 */
export async function evaluateAll(ctx: PropCtx, trading: TradingApi) {
  const phases = await ctx.db.select().from(propPhases).where(eq(propPhases.status, PHASE.active))
  let passed = 0
  let failed = 0
  for (const p of phases) {
    const r = await evaluatePhase(ctx, trading, p).catch((e) => {
      ctx.logger.log('error', 'prop evaluation failed', { phase: p.id, err: String(e) })
      return null
    })
    if (r === 'passed') passed++
    if (r === 'failed') failed++
  }
  return { phases: phases.length, passed, failed }
}

export async function evaluatePhase(ctx: PropCtx, trading: TradingApi, p: PhaseRow) {
  const now = ctx.clock.now()
  const figures = await figuresOf(ctx, p.accountLogin)
  if (!figures) return null
  const rules = Rules.parse(JSON.parse(p.rules))
  const day = localDay(now, p.timeZone)
  const snap = await daySnapshot(ctx, p.id, day, figures)
  // the days before today end where today started
  await ctx.db
    .update(propDays)
    .set({ endBalance: snap.balance, endEquity: snap.equity })
    .where(and(eq(propDays.phaseId, p.id), lt(propDays.day, day), isNull(propDays.endBalance)))
  const [eod] = await ctx.db
    .select({ high: sql<number | null>`max(${propDays.endBalance})` })
    .from(propDays)
    .where(eq(propDays.phaseId, p.id))
  const highest = Math.max(p.highestEodBalance, eod?.high ?? 0)
  const positions = await trading.positionsSince(p.accountLogin, p.startTime)
  const days = tradingDays(rules, p.timeZone, positions)
  const openedToday = positions.filter((x) => localDay(x.openTime, p.timeZone) === day).length
  await ctx.db
    .update(propDays)
    .set({
      minEquity: sql`min(${propDays.minEquity}, ${figures.equity})`,
      positionsOpened: openedToday,
      tradingDay: days.has(day) ? 1 : 0,
    })
    .where(and(eq(propDays.phaseId, p.id), eq(propDays.day, day)))
  await ctx.db
    .update(propPhases)
    .set({ tradingDays: days.size, highestEodBalance: highest, updatedAt: now })
    .where(and(eq(propPhases.id, p.id), eq(propPhases.status, PHASE.active)))
  const v = verdict(rules, {
    initialBalance: p.initialBalance,
    balance: figures.balance,
    equity: figures.equity,
    dayStartEquity: snap.equity,
    highestEodBalance: highest,
    openPositions: await trading.openPositions(p.accountLogin),
    tradingDays: days.size,
    daysElapsed: daysInclusive(p.startDay, day),
  })
  if (v.outcome === 'failed') {
    if (await recordBreach(ctx, p, v.breach, figures, now)) await ctx.bus.publish(PHASES_CHANGED, [p.id])
    return 'failed'
  }
  if (v.outcome === 'passed') {
    await passPhase(ctx, p, figures)
    return 'passed'
  }
  return 'running'
}

/**
 * A phase met its target: the next step's account is opened (its group's default_deposit as the initial
 * balance, with the purchase's finance operations), then in one transaction the phase passes, the next
 * one starts and the challenge moves to it; after the last step the challenge has passed. The passed
 * account stops trading.
 */
async function passPhase(ctx: PropCtx, p: PhaseRow, figures: { balance: number; equity: number }) {
  const [challenge] = await ctx.db.select().from(propChallenges).where(eq(propChallenges.id, p.challengeId))
  const [purchase] = await ctx.db
    .select()
    .from(propPurchases)
    .where(eq(propPurchases.id, challenge!.purchaseId))
  const [program] = await ctx.db.select().from(propPrograms).where(eq(propPrograms.id, p.programId))
  if (!challenge || !purchase || !program) return
  // the steps as bought: later edits of the program apply to new purchases only
  const steps = ProgramStep.array().parse(JSON.parse(program.steps))
  const next = steps[p.phaseIndex]
  const now = ctx.clock.now()
  let opened: { login: number; group: string; deposit: number; currency: string } | null = null
  if (next) {
    const group = await ctx.accounts.findGroup(p.brandId, next.account_group)
    if (!group) throw new Error(`group ${next.account_group} of program ${program.id} is gone`)
    const password = crypto.randomUUID()
    const account = await ctx.steps.openAccount(p.brandId, challenge.customerId, group.name, password)
    const deposit = fromMinor(group.defaultDeposit, group.currency)
    await ctx.steps.initialBalance(p.brandId, account.login, deposit, {
      module: 'prop',
      operation: 'initial_balance',
      program_id: program.id,
      purchase_id: purchase.id,
      customer_id: challenge.customerId,
      payer_login: purchase.payerLogin,
      challenge_login: account.login,
      idempotency_key: purchase.idempotencyKey,
    })
    opened = {
      login: account.login,
      group: group.name,
      deposit: group.defaultDeposit,
      currency: group.currency,
    }
  }
  const moved = await ctx.uow.run(async (tx, work) => {
    const [done] = await tx
      .update(propPhases)
      .set({
        status: PHASE.passed,
        finalBalance: figures.balance,
        finalEquity: figures.equity,
        endTime: now,
        updatedAt: now,
      })
      .where(and(eq(propPhases.id, p.id), eq(propPhases.status, PHASE.active)))
      .returning({ id: propPhases.id })
    if (!done) return null
    let nextId: number | null = null
    if (opened && next) {
      const [row] = await tx
        .insert(propPhases)
        .values({
          brandId: p.brandId,
          challengeId: p.challengeId,
          programId: p.programId,
          phaseIndex: p.phaseIndex + 1,
          phaseType: next.phase_type,
          accountLogin: opened.login,
          accountGroup: opened.group,
          currency: opened.currency,
          rules: JSON.stringify(next.rules),
          timeZone: p.timeZone,
          status: PHASE.active,
          initialBalance: opened.deposit,
          initialEquity: opened.deposit,
          highestEodBalance: opened.deposit,
          startDay: localDay(now, p.timeZone),
          startTime: now,
          createdAt: now,
          updatedAt: now,
        })
        .returning({ id: propPhases.id })
      nextId = row!.id
    }
    await tx
      .update(propChallenges)
      .set(
        opened
          ? { currentPhaseIndex: p.phaseIndex + 1, accountLogin: opened.login, updatedAt: now }
          : { status: CHALLENGE.passed, endTime: now, updatedAt: now },
      )
      .where(and(eq(propChallenges.id, p.challengeId), eq(propChallenges.status, CHALLENGE.active)))
    await ctx.accounts.setReadOnlyTx(tx, work, p.brandId, p.accountLogin)
    work.emit(PropPhasePassed, p.brandId, {
      login: p.accountLogin,
      challenge_id: p.challengeId,
      phase_id: p.id,
      phase_index: p.phaseIndex,
      currency: p.currency,
      next_login: opened?.login ?? null,
      funded: next?.phase_type === FUNDED,
    })
    return nextId
  })
  await ctx.bus.publish(PHASES_CHANGED, moved ? [p.id, moved] : [p.id])
}
