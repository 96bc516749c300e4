import { and, eq, sql } from 'drizzle-orm'
import type { Session } from '../../kernel/auth/session'
import type { Brand } from '../../kernel/brand/registry'
import type { Tx } from '../../kernel/db/client'
import { isUniqueViolation } from '../../kernel/db/errors'
import { assertSameRequest, fingerprint } from '../../kernel/http/idempotency'
import type { PropApiData, PropCtx } from './context'
import { limitProblem, type PurchaseCounts, type PurchaseLimits } from './domain/limits'
import { ProgramStep } from './domain/program'
import { CHALLENGE, FAILURES, type FailedStep, PHASE, PURCHASE } from './domain/purchase'
import { localDay } from './domain/rules'
import { type PropCode, refuse } from './errors'
import { PropPurchased } from './events'
import { checkPayer } from './payer-check'
import { programLimits } from './programs'
import { advance, PurchaseCompleted, type PurchaseRow, rollBack } from './purchase-rollback'
import { propChallenges, propPrograms, propPurchases } from './schema'

/** A temporary password for the challenge account: shown once in the answer, never stored in clear. */
function temporaryPassword() {
  const alphabet = 'ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789'
  const bytes = crypto.getRandomValues(new Uint8Array(14))
  return Array.from(bytes, (b) => alphabet[b % alphabet.length]).join('')
}

async function existing(ctx: PropCtx, brandId: number, customerId: number, key: string, request: string) {
  const [row] = await ctx.db
    .select()
    .from(propPurchases)
    .where(
      and(
        eq(propPurchases.brandId, brandId),
        eq(propPurchases.customerId, customerId),
        eq(propPurchases.idempotencyKey, key),
      ),
    )
  if (row) assertSameRequest(row.requestHash, request)
  return row ?? null
}

/** The customer's purchases of a program that count toward its limits (made so far). */
export async function purchaseCounts(
  tx: Pick<Tx, 'all'>,
  brandId: number,
  customerId: number,
  programId: number,
  now: number,
  limits: PurchaseLimits,
): Promise<PurchaseCounts> {
  const since = now - (limits.period_days ?? 0) * 86_400_000
  const r = await tx.all<{ total: number; in_period: number | null; active: number | null }>(sql`
    select count(*) as total, sum(p.created_at >= ${since}) as in_period,
      sum(c.id is null or c.status in (${CHALLENGE.pending}, ${CHALLENGE.active})) as active
    from prop_purchases p left join prop_challenges c on c.purchase_id = p.id
    where p.brand_id = ${brandId} and p.customer_id = ${customerId} and p.program_id = ${programId}
      and p.status not in (${PURCHASE.failed}, ${PURCHASE.refunded})`)
  const c = r[0]
  return { total: Number(c?.total ?? 0), inPeriod: Number(c?.in_period ?? 0), active: Number(c?.active ?? 0) }
}

/** Validations 1–7 of 4.14, in order, with the codes of 7.4. */
async function validate(
  ctx: PropCtx,
  brand: Brand,
  customerId: number,
  programId: number,
  payerLogin: number,
) {
  const [program] = await ctx.db
    .select()
    .from(propPrograms)
    .where(and(eq(propPrograms.id, programId), eq(propPrograms.brandId, brand.id)))
  if (!program) throw refuse('PROGRAM_NOT_FOUND', `program ${programId} not found`)
  if (program.active !== 1) throw refuse('PROGRAM_DISABLED', `program ${programId} is not active`)
  const { problem } = await checkPayer(ctx, brand.id, customerId, program, payerLogin)
  if (problem) throw refuse(problem.code, problem.message)
  // the fee is taken at current prices only (503 PRICE_STALE with positions open and none here): asked
  // before the purchase is written, so a retry with the same key buys instead of finding it failed
  if (program.priceMinor > 0) await ctx.accounts.marginIn(ctx.db, payerLogin)
  const steps = ProgramStep.array().parse(JSON.parse(program.steps))
  const first = steps[0]
  const group = first ? await ctx.accounts.findGroup(brand.id, first.account_group) : null
  if (!first || !group) throw refuse('INVALID_DEMO_GROUP', 'the program has no first step group')
  if (group.accountMode !== 'DEMO')
    throw refuse('DEMO_GROUP_REQUIRED', `the first step group ${group.name} is not DEMO`)
  return { program, steps, first, group }
}

/**
 * The purchase row, written first: unique per customer and idempotency key (a repeat, even a concurrent
 * one, gets that row), with the limits' count in the same transaction: the write lock orders concurrent
 * purchases, so each counts the ones before it (two racing trials cannot both pass a limit of one).
 */
async function openPurchase(
  ctx: PropCtx,
  brandId: number,
  customerId: number,
  body: { program_id: number; payer_login: number },
  v: Awaited<ReturnType<typeof validate>>,
  key: string | null,
  request: string,
): Promise<{ prior: PurchaseRow } | { purchase: PurchaseRow }> {
  const now = ctx.clock.now()
  try {
    return {
      purchase: await ctx.db.transaction(async (tx) => {
        const [row] = (await tx
          .insert(propPurchases)
          .values({
            brandId,
            programId: v.program.id,
            programVersion: v.program.version,
            steps: v.program.steps,
            customerId,
            payerLogin: body.payer_login,
            status: PURCHASE.pending,
            idempotencyKey: key,
            requestHash: key ? request : null,
            paymentStatus: v.program.priceMinor > 0 ? 'pending' : 'not_required',
            activationStatus: 'pending',
            currency: v.program.currency,
            amountMinor: v.program.priceMinor,
            createdAt: now,
            updatedAt: now,
          })
          .returning()) as [PurchaseRow]
        const limits = programLimits(v.program)
        // a program without limits counts nothing: the count reads every purchase the customer made of it
        if (Object.keys(limits).length > 0) {
          const over = limitProblem(
            limits,
            await purchaseCounts(tx, brandId, customerId, v.program.id, now, limits),
          )
          if (over) throw refuse(over.code, over.message)
        }
        return row
      }),
    }
  } catch (e) {
    if (key && isUniqueViolation(e)) {
      const prior = await existing(ctx, brandId, customerId, key, request)
      if (prior) return { prior }
    }
    throw e
  }
}

/**
 * A step failed: the row as stored decides, not the request's view of it (the step's commit may have
 * landed although it answered an error, a remote database's timeout, or the recovery job may have taken
 * it). Rolls it back (its records decide what is given back) and refuses with the failed step's code; a
 * purchase found active is PurchaseCompleted (the caller answers it as bought).
 */
async function failPurchase(ctx: PropCtx, id: number, failed: FailedStep, cause: unknown): Promise<never> {
  const [stored] = (await ctx.db
    .select()
    .from(propPurchases)
    .where(eq(propPurchases.id, id))) as PurchaseRow[]
  if (!stored) throw cause
  if (stored.status === PURCHASE.active) throw new PurchaseCompleted(stored)
  await rollBack(ctx, stored, failed, cause instanceof Error ? cause.message : String(cause))
  const [ended] = (await ctx.db.select().from(propPurchases).where(eq(propPurchases.id, id))) as PurchaseRow[]
  const code = ended?.failureReason || FAILURES[failed].code
  throw refuse(code as PropCode, `purchase ${id} failed at ${failed.replace('_', ' ')}`)
}

/**
 * POST /prop/challenge/buy (4.14, 4.19). The purchase row is written first (unique per customer and
 * idempotency key: a repeat, even a concurrent one, gets that row); then each step commits on its own
 * with its record on the purchase (so the row always says what was done), and a failed step requests
 * exactly the rollbacks of 4.19 before the purchase takes its final status. A crash between steps is
 * ended the same way by the job prop.purchases.recover (purchase-rollback.ts).
 */
export async function buy(
  ctx: PropCtx,
  brand: Brand,
  session: Session,
  body: { program_id: number; payer_login: number; idempotency_key?: string },
) {
  const customerId = session.customerId!
  const key = body.idempotency_key ?? null
  const request = fingerprint({ program_id: body.program_id, payer_login: body.payer_login })
  if (key) {
    const prior = await existing(ctx, brand.id, customerId, key, request)
    if (prior) return { prior }
  }
  const v = await validate(ctx, brand, customerId, body.program_id, body.payer_login)
  const opened = await openPurchase(ctx, brand.id, customerId, body, v, key, request)
  if ('prior' in opened) return opened
  let purchase = opened.purchase
  const data = (operation: string, login: number | null): PropApiData => ({
    module: 'prop',
    operation,
    program_id: v.program.id,
    purchase_id: purchase.id,
    customer_id: customerId,
    payer_login: body.payer_login,
    challenge_login: login,
    idempotency_key: key,
  })
  // each step records itself on the purchase in its own transaction (purchase-rollback.ts: advance)
  const recorded =
    (values: (made: number) => Partial<PurchaseRow>, unrecorded?: 'initialBalanceOrder') =>
    async (tx: Tx, _work: unknown, made: number) => {
      purchase = await advance(tx, purchase, values(made), ctx.clock.now(), unrecorded)
    }
  const fail = (failed: FailedStep, cause: unknown) => failPurchase(ctx, purchase.id, failed, cause)

  if (v.program.priceMinor > 0) {
    try {
      await ctx.steps.takeFee(
        brand.id,
        body.payer_login,
        v.program.priceMinor,
        data('payment', null),
        recorded((order) => ({ status: PURCHASE.paid, paymentStatus: 'paid', paymentOrder: order })),
      )
    } catch (e) {
      return fail('payment', e)
    }
  }
  const password = temporaryPassword()
  let account: Awaited<ReturnType<PropCtx['steps']['openAccount']>>
  try {
    account = await ctx.steps.openAccount(
      {
        brandId: brand.id,
        customerId,
        group: v.group.name,
        password,
        maxPositions: v.first.rules.max_positions,
      },
      recorded((login) => ({ status: PURCHASE.account_created, accountLogin: login })),
    )
  } catch (e) {
    return fail('account', e)
  }
  try {
    await ctx.steps.initialBalance(
      brand.id,
      account.login,
      v.group.defaultDeposit,
      data('initial_balance', account.login),
      recorded((order) => ({ initialBalanceOrder: order }), 'initialBalanceOrder'),
    )
  } catch (e) {
    return fail('initial_balance', e)
  }
  const started = ctx.clock.now()
  let challengeId: number
  try {
    // the challenge, its first phase, the purchase active and announced (affiliates consume
    // prop.purchased): one transaction
    challengeId = await ctx.steps.createChallenge(
      {
        brandId: brand.id,
        purchaseId: purchase.id,
        programId: v.program.id,
        customerId,
        accountLogin: account.login,
        currentPhaseIndex: 1,
        status: CHALLENGE.active,
        startTime: started,
        createdAt: started,
        updatedAt: started,
      },
      {
        brandId: brand.id,
        programId: v.program.id,
        phaseIndex: 1,
        phaseType: v.first.phase_type,
        accountLogin: account.login,
        accountGroup: v.group.name,
        currency: v.group.currency,
        rules: JSON.stringify(v.first.rules),
        timeZone: v.program.timeZone,
        status: PHASE.active,
        initialBalance: v.group.defaultDeposit,
        initialEquity: v.group.defaultDeposit,
        highestEodBalance: v.group.defaultDeposit,
        startDay: localDay(started, v.program.timeZone),
        startTime: started,
        createdAt: started,
        updatedAt: started,
      },
      async (tx, work, challenge) => {
        purchase = await advance(
          tx,
          purchase,
          {
            status: PURCHASE.active,
            paymentStatus: v.program.priceMinor > 0 ? 'paid' : 'not_required',
            activationStatus: 'active',
            nextAction: 'OPEN_CHALLENGE',
            canRetry: 0,
            canCancel: 0,
          },
          ctx.clock.now(),
        )
        work.emit(PropPurchased, brand.id, {
          purchase_id: purchase.id,
          customer_id: customerId,
          program_id: v.program.id,
          amount_minor: v.program.priceMinor,
          currency: v.program.currency,
          challenge_id: challenge,
        })
      },
    )
  } catch (e) {
    try {
      return await fail('challenge', e)
    } catch (outcome) {
      // its commit landed although it answered an error: bought, the challenge is there
      if (!(outcome instanceof PurchaseCompleted)) throw outcome
      const [c] = await ctx.db
        .select({ id: propChallenges.id })
        .from(propChallenges)
        .where(eq(propChallenges.purchaseId, outcome.row.id))
      if (!c) throw e
      return { purchase: outcome.row, challengeId: c.id, account, password }
    }
  }
  return { purchase, challengeId, account, password }
}
