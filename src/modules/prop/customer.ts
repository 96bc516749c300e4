import { and, asc, desc, eq, inArray } from 'drizzle-orm'
import type { Session } from '../../kernel/auth/session'
import type { Brand } from '../../kernel/brand/registry'
import { ApiError } from '../../kernel/http/errors'
import { fromMinor } from '../accounts'
import type { PropCtx } from './context'
import { ProgramStep } from './domain/program'
import { type PhaseState, PhaseRules as Rules } from './domain/rules'
import { type ProgramRow, programRow, programView } from './programs'
import { propBreaches, propChallenges, propDays, propPhases, propPurchases } from './schema'
import { figuresOf } from './state'
import { breachView, challengeView, dayView, phaseView, purchaseView } from './views'

const challengeNotFound = (id: number) =>
  new ApiError(404, 'CHALLENGE_NOT_FOUND', `challenge ${id} not found`)

/** The customer's REAL accounts in the program's currency, each with whether it can pay now and why not. */
export async function payerAccounts(ctx: PropCtx, brand: Brand, session: Session, programId: number) {
  return payersFor(ctx, brand, session, await programRow(ctx, brand.id, programId))
}

async function payersFor(ctx: PropCtx, brand: Brand, session: Session, program: ProgramRow) {
  const logins = await ctx.accounts.customerAccounts(brand.id, session.customerId!)
  const rows = []
  for (const login of logins) {
    const a = await ctx.accounts.read.account(login)
    const g = a && (await ctx.accounts.read.group(a.groupId))
    if (!a || !g || g.accountMode !== 'REAL') continue
    const reason =
      a.enable !== 1
        ? 'INVALID_PAYER_ACCOUNT'
        : g.currency !== program.currency
          ? 'CURRENCY_CONVERSION_REQUIRED'
          : a.balance < program.priceMinor
            ? 'NOT_ENOUGH_FUNDS'
            : null
    rows.push({
      login,
      group: g.name,
      currency: g.currency,
      balance: fromMinor(a.balance, g.currency),
      can_pay: reason === null,
      reason: reason ?? '',
    })
  }
  return {
    program_id: program.id,
    price: fromMinor(program.priceMinor, program.currency),
    currency: program.currency,
    rows,
  }
}

/** What a purchase would do, without doing it (the same validations as the purchase, as data). */
export async function preview(
  ctx: PropCtx,
  brand: Brand,
  session: Session,
  programId: number,
  payerLogin: number,
) {
  const program = await programRow(ctx, brand.id, programId)
  const payers = await payersFor(ctx, brand, session, program)
  const payer = payers.rows.find((r) => r.login === payerLogin)
  const steps = ProgramStep.array().parse(JSON.parse(program.steps))
  const first = steps[0] ? await ctx.accounts.findGroup(brand.id, steps[0].account_group) : null
  const problem =
    program.active !== 1
      ? 'PROGRAM_DISABLED'
      : !payer
        ? 'INVALID_PAYER_ACCOUNT'
        : payer.reason ||
          (!first ? 'INVALID_DEMO_GROUP' : first.accountMode !== 'DEMO' ? 'DEMO_GROUP_REQUIRED' : '')
  const price = fromMinor(program.priceMinor, program.currency)
  return {
    program: programView(program),
    payer_login: payerLogin,
    can_buy: problem === '',
    reason: problem,
    price,
    currency: program.currency,
    payer_balance_after: payer ? Math.round((payer.balance - price) * 100) / 100 : null,
    first_account: first
      ? {
          group: first.name,
          initial_balance: fromMinor(first.defaultDeposit, first.currency),
          currency: first.currency,
        }
      : null,
    effects: [
      ...(price > 0
        ? [`${price} ${program.currency} is taken from account ${payerLogin} (PROP_CHALLENGE_PURCHASE)`]
        : []),
      `a new account opens in ${first?.name ?? '?'} with a temporary password shown once`,
      `it receives ${first ? fromMinor(first.defaultDeposit, first.currency) : 0} as its initial balance`,
      'the challenge starts at phase 1',
    ],
  }
}

export async function listPurchases(ctx: PropCtx, brandId: number, customerId: number) {
  const rows = await ctx.db
    .select()
    .from(propPurchases)
    .where(and(eq(propPurchases.brandId, brandId), eq(propPurchases.customerId, customerId)))
    .orderBy(desc(propPurchases.id))
    .limit(200)
  return { rows: rows.map(purchaseView) }
}

export async function listChallenges(ctx: PropCtx, brandId: number, customerId: number) {
  const rows = await ctx.db
    .select()
    .from(propChallenges)
    .where(and(eq(propChallenges.brandId, brandId), eq(propChallenges.customerId, customerId)))
    .orderBy(desc(propChallenges.id))
    .limit(200)
  return { rows: rows.map(challengeView) }
}

/** The challenge of the customer (another's answers 404, as a missing one). */
export async function ownChallenge(ctx: PropCtx, brandId: number, customerId: number, id: number) {
  const [c] = await ctx.db
    .select()
    .from(propChallenges)
    .where(
      and(
        eq(propChallenges.id, id),
        eq(propChallenges.brandId, brandId),
        eq(propChallenges.customerId, customerId),
      ),
    )
  if (!c) throw challengeNotFound(id)
  return c
}

async function phasesOf(ctx: PropCtx, challengeId: number) {
  return ctx.db
    .select()
    .from(propPhases)
    .where(eq(propPhases.challengeId, challengeId))
    .orderBy(asc(propPhases.phaseIndex))
}

/** GET /prop/challenges/{id}: every field of 2.15, every phase with latest_metric and progress. */
export async function challengeDetail(ctx: PropCtx, brandId: number, customerId: number, id: number) {
  const c = await ownChallenge(ctx, brandId, customerId, id)
  const [purchase] = await ctx.db.select().from(propPurchases).where(eq(propPurchases.id, c.purchaseId))
  const program = await programRow(ctx, brandId, c.programId)
  const phases = []
  for (const p of await phasesOf(ctx, c.id)) {
    const rules = Rules.parse(JSON.parse(p.rules))
    const [today] = await ctx.db
      .select()
      .from(propDays)
      .where(eq(propDays.phaseId, p.id))
      .orderBy(desc(propDays.day))
      .limit(1)
    const live = p.status === 1 ? await figuresOf(ctx, p.accountLogin) : null
    const f = live ?? {
      balance: p.finalBalance ?? p.initialBalance,
      equity: p.finalEquity ?? p.initialEquity,
    }
    const s: PhaseState = {
      initialBalance: p.initialBalance,
      balance: f.balance,
      equity: f.equity,
      dayStartEquity: today?.startEquity ?? p.initialEquity,
      highestEodBalance: p.highestEodBalance,
      openPositions: 0,
      tradingDays: p.tradingDays,
      daysElapsed: 1,
    }
    phases.push(phaseView(p, rules, s))
  }
  const current = phases.find((p) => p.phase_index === c.currentPhaseIndex) ?? null
  const [breach] = await ctx.db
    .select()
    .from(propBreaches)
    .where(eq(propBreaches.challengeId, c.id))
    .orderBy(desc(propBreaches.id))
    .limit(1)
  const breachPhase = breach ? phases.find((p) => p.id === breach.phaseId) : undefined
  return {
    challenge: challengeView(c),
    purchase: purchase ? purchaseView(purchase) : null,
    program: programView(program),
    phases,
    current_phase: current,
    latest_metric: current?.latest_metric ?? null,
    latest_breach: breach ? breachView(breach, program.currency, breachPhase?.phase_index ?? 0) : null,
  }
}

/** GET /prop/challenges/{id}/metrics: one row per phase and local day, newest first, cursor paged by day. */
export async function challengeMetrics(ctx: PropCtx, brandId: number, customerId: number, id: number) {
  const c = await ownChallenge(ctx, brandId, customerId, id)
  const phases = await phasesOf(ctx, c.id)
  const byId = new Map(phases.map((p) => [p.id, p]))
  const rows = phases.length
    ? await ctx.db
        .select()
        .from(propDays)
        .where(
          inArray(
            propDays.phaseId,
            phases.map((p) => p.id),
          ),
        )
        .orderBy(desc(propDays.day))
        .limit(1000)
    : []
  return {
    challenge_id: c.id,
    rows: rows.map((d) => {
      const p = byId.get(d.phaseId)!
      return dayView(d, p.currency, p.phaseIndex)
    }),
  }
}

/** GET /prop/challenges/{id}/breaches */
export async function challengeBreaches(ctx: PropCtx, brandId: number, customerId: number, id: number) {
  const c = await ownChallenge(ctx, brandId, customerId, id)
  const phases = new Map((await phasesOf(ctx, c.id)).map((p) => [p.id, p]))
  const rows = await ctx.db
    .select()
    .from(propBreaches)
    .where(eq(propBreaches.challengeId, c.id))
    .orderBy(desc(propBreaches.id))
  return {
    challenge_id: c.id,
    rows: rows.map((b) => {
      const p = phases.get(b.phaseId)!
      return breachView(b, p.currency, p.phaseIndex)
    }),
  }
}
