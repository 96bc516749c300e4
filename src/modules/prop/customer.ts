import { and, asc, desc, eq, inArray } from 'drizzle-orm'
import type { Session } from '../../kernel/auth/session'
import type { Brand } from '../../kernel/brand/registry'
import { fromMinor, roundToCurrency } from '../accounts'
import type { PropCtx } from './context'
import { limitProblem } from './domain/limits'
import { ProgramStep } from './domain/program'
import { PHASE } from './domain/purchase'
import { localDay, type PhaseState, PhaseRules as Rules } from './domain/rules'
import { refuse } from './errors'
import { checkPayer } from './payer-check'
import { type ProgramRow, programLimits, programRow, programView } from './programs'
import { purchaseCounts } from './purchase'
import { propBreaches, propChallenges, propDays, propPhases, propPurchases } from './schema'
import { figuresOf } from './state'
import { breachView, challengeView, dayView, phaseView, purchaseView } from './views'

const challengeNotFound = (id: number) => refuse('CHALLENGE_NOT_FOUND', `challenge ${id} not found`)

/** The customer's REAL accounts in the program's currency, each with whether it can pay now and why not. */
export async function payerAccounts(ctx: PropCtx, brand: Brand, session: Session, programId: number) {
  return payersFor(ctx, brand, session, await programRow(ctx, brand.id, programId))
}

async function payersFor(ctx: PropCtx, brand: Brand, session: Session, program: ProgramRow) {
  const logins = await ctx.accounts.customerAccounts(brand.id, session.customerId!)
  const rows = []
  for (const login of logins) {
    const {
      account: a,
      group: g,
      problem,
    } = await checkPayer(ctx, brand.id, session.customerId!, program, login)
    // a DEMO account is no payer at all; a REAL one is listed with why it cannot pay now
    if (!a || !g || g.accountMode !== 'REAL') continue
    rows.push({
      login,
      group: g.name,
      currency: g.currency,
      balance: fromMinor(a.balance, g.currency),
      can_pay: problem === null,
      reason: problem?.code ?? '',
      reason_message: problem?.message ?? '',
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
  const payer = await checkPayer(ctx, brand.id, session.customerId!, program, payerLogin)
  // as the purchase counts: with the one it would make
  const limits = programLimits(program)
  const made = await purchaseCounts(
    ctx.db,
    brand.id,
    session.customerId!,
    program.id,
    ctx.clock.now(),
    limits,
  )
  const overLimit = limitProblem(limits, {
    total: made.total + 1,
    inPeriod: made.inPeriod + 1,
    active: made.active + 1,
  })
  const steps = ProgramStep.array().parse(JSON.parse(program.steps))
  const first = steps[0] ? await ctx.accounts.findGroup(brand.id, steps[0].account_group) : null
  // the order of spec 4.14's validations, as the purchase runs them
  const problem =
    program.active !== 1
      ? { code: 'PROGRAM_DISABLED', message: `program ${program.id} is not active` }
      : (payer.problem ??
        (!first
          ? { code: 'INVALID_DEMO_GROUP', message: 'the program has no first step group' }
          : first.accountMode !== 'DEMO'
            ? { code: 'DEMO_GROUP_REQUIRED', message: `the first step group ${first.name} is not DEMO` }
            : overLimit))
  const price = fromMinor(program.priceMinor, program.currency)
  const balance = payer.account && payer.group ? fromMinor(payer.account.balance, payer.group.currency) : null
  return {
    program: programView(program),
    payer_login: payerLogin,
    can_buy: problem === null,
    reason: problem?.code ?? '',
    reason_message: problem?.message ?? '',
    price,
    currency: program.currency,
    payer_balance_after:
      balance !== null && !payer.problem ? roundToCurrency(balance - price, program.currency) : null,
    first_account: first
      ? {
          group: first.name,
          initial_balance: fromMinor(first.defaultDeposit, first.currency),
          currency: first.currency,
        }
      : null,
    // what a purchase would do: nothing, when it would be refused
    effects: problem
      ? []
      : [
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
    const active = p.status === PHASE.active
    // an active phase's daily loss is today's (its local day's row); before the day's first pass there is
    // none and nothing is lost today yet. A phase that ended shows its last day's
    const [today] = await ctx.db
      .select()
      .from(propDays)
      .where(
        and(
          eq(propDays.phaseId, p.id),
          active ? eq(propDays.day, localDay(ctx.clock.now(), p.timeZone)) : undefined,
        ),
      )
      .orderBy(desc(propDays.day))
      .limit(1)
    const live = active ? await figuresOf(ctx, p.accountLogin) : null
    const f = live ?? {
      balance: p.finalBalance ?? p.initialBalance,
      equity: p.finalEquity ?? p.initialEquity,
    }
    const s: PhaseState = {
      initialBalance: p.initialBalance,
      balance: f.balance,
      equity: f.equity,
      dayStartEquity: today?.startEquity ?? (live ? live.equity : p.initialEquity),
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

/** GET /prop/challenges/{id}/metrics: one row per phase and local day, newest first (the latest 1,000). */
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
  // newest first: a phase's next day, whose start ends the day, comes before it
  const later = new Map<number, (typeof rows)[number]>()
  return {
    challenge_id: c.id,
    rows: rows.map((d) => {
      const p = byId.get(d.phaseId)!
      const view = dayView(d, p.currency, p.phaseIndex, later.get(d.phaseId))
      later.set(d.phaseId, d)
      return view
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
