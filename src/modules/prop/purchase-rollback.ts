import { and, eq, inArray, isNull, lt, or } from 'drizzle-orm'
import type { Tx } from '../../kernel/db/client'
import type { PropApiData, PropCtx } from './context'
import { FAILURES, type FailedStep, failedOutcome, PURCHASE } from './domain/purchase'
import { propPurchases } from './schema'

export type PurchaseRow = typeof propPurchases.$inferSelect

/** The next action of a purchase whose rollbacks are taken but not all done yet. */
const ROLLBACK_PENDING = 'ROLLBACK_PENDING'

/** How long a purchase may stay between steps before the recovery job ends it (a live one takes < 1 s). */
export const PURCHASE_STALE_MS = 120_000

/**
 * The purchase turned active although its last step answered an error (the commit landed): the caller
 * answers it as bought.
 */
export class PurchaseCompleted extends Error {
  constructor(readonly row: PurchaseRow) {
    super(`purchase ${row.id} is active`)
    this.name = 'PurchaseCompleted'
  }
}

/** Another (the recovery job, or the request itself) moved the purchase first: this step does not count. */
class PurchaseMoved extends Error {
  constructor(id: number) {
    super(`purchase ${id} moved on`)
    this.name = 'PurchaseMoved'
  }
}

/**
 * Moves a purchase on in a step's transaction, from the state the step expects (its status, and for the
 * initial balance its not being recorded yet); throws PurchaseMoved when it is no longer there.
 */
export async function advance(
  tx: Tx,
  row: Pick<PurchaseRow, 'id' | 'status'>,
  values: Partial<PurchaseRow>,
  now: number,
  unrecorded?: 'initialBalanceOrder',
): Promise<PurchaseRow> {
  const [moved] = (await tx
    .update(propPurchases)
    .set({ ...values, updatedAt: now })
    .where(
      and(
        eq(propPurchases.id, row.id),
        eq(propPurchases.status, row.status),
        unrecorded ? isNull(propPurchases[unrecorded]) : undefined,
      ),
    )
    .returning()) as PurchaseRow[]
  if (!moved) throw new PurchaseMoved(row.id)
  return moved
}

/** The step a purchase stopped before, read from what it recorded (each step records itself atomically). */
function stepAfter(row: PurchaseRow): FailedStep {
  if (row.status === PURCHASE.pending) return row.amountMinor > 0 ? 'payment' : 'account'
  if (row.status === PURCHASE.paid) return 'account'
  return row.initialBalanceOrder === null ? 'initial_balance' : 'challenge'
}

const stepOfCode = (code: string) =>
  (Object.keys(FAILURES) as FailedStep[]).find((s) => FAILURES[s].code === code) ?? 'challenge'

/** The states between steps: a purchase in one of them may be ended (never an active one). */
const UNFINISHED = [PURCHASE.pending, PURCHASE.paid, PURCHASE.account_created]

/**
 * Ends a purchase that stopped before `step` (the step failed, or a crash left it there): takes it first
 * (failed, rollbacks pending; conditional on the unfinished state it was seen in, so a request still
 * running cannot record another step after it), then gives back what its records say was taken. False
 * when another took it first, or it is no longer between steps.
 */
export async function rollBack(ctx: PropCtx, seen: PurchaseRow, step: FailedStep, cause: string) {
  if (!(UNFINISHED as number[]).includes(seen.status)) return false
  const [taken] = (await ctx.db
    .update(propPurchases)
    .set({
      status: PURCHASE.failed,
      activationStatus: 'failed',
      nextAction: ROLLBACK_PENDING,
      failureReason: FAILURES[step].code,
      comment: cause.slice(0, 200),
      canRetry: 0,
      canCancel: 0,
      updatedAt: ctx.clock.now(),
    })
    .where(
      and(
        eq(propPurchases.id, seen.id),
        eq(propPurchases.status, seen.status),
        inArray(propPurchases.status, UNFINISHED),
        eq(propPurchases.updatedAt, seen.updatedAt),
      ),
    )
    .returning()) as PurchaseRow[]
  if (!taken) return false
  await finishRollBack(ctx, taken)
  return true
}

/** A purchase whose rollbacks are owed: taken and not finished, or one that failed (retried by the job). */
const owesRollbacks = or(
  eq(propPurchases.nextAction, ROLLBACK_PENDING),
  eq(propPurchases.paymentStatus, 'rollback_failed'),
)

type ApiDataOf = (operation: string) => PropApiData

/**
 * The steps of a purchase in the order they run, each with what shows it done (its record on the
 * purchase) and its compensation beside it (4.19): the fee is given back, the initial balance taken back;
 * the account a failed purchase opened stays, empty; the challenge step is the purchase's activation (an
 * active purchase is never rolled back).
 */
const STEPS: {
  step: FailedStep
  done: (r: PurchaseRow) => boolean
  undo?: (ctx: PropCtx, r: PurchaseRow, data: ApiDataOf) => Promise<unknown>
}[] = [
  {
    step: 'payment',
    done: (r) => r.paymentOrder !== null,
    undo: (ctx, r, data) =>
      ctx.steps.refundFee(r.brandId, r.payerLogin, r.amountMinor, data('payment_rollback')),
  },
  { step: 'account', done: (r) => r.accountLogin !== null },
  {
    step: 'initial_balance',
    done: (r) => r.accountLogin !== null && r.initialBalanceOrder !== null,
    async undo(ctx, r, data) {
      const given = await ctx.accounts.operationAmount(r.brandId, r.accountLogin!, r.initialBalanceOrder!)
      if (given === null) throw new Error(`initial balance ${r.initialBalanceOrder} not found`)
      return ctx.steps.reverseInitialBalance(
        r.brandId,
        r.accountLogin!,
        Math.abs(given),
        data('initial_balance_rollback'),
      )
    },
  },
  { step: 'challenge', done: (r) => r.status === PURCHASE.active },
]

/**
 * The rollbacks of 4.19: the compensation of every step the purchase's records show done, latest first
 * (whichever step failed, even one whose commit landed while its caller saw an error), each idempotent
 * (keyed by purchase), then its final state. A crash in between leaves it ROLLBACK_PENDING and a failed
 * rollback leaves it `rollback_failed` (CONTACT_SUPPORT for the customer): the recovery job runs this
 * again until it is done.
 */
async function finishRollBack(ctx: PropCtx, row: PurchaseRow) {
  const step = stepOfCode(row.failureReason)
  const data: ApiDataOf = (operation) => ({
    module: 'prop',
    operation,
    program_id: row.programId,
    purchase_id: row.id,
    customer_id: row.customerId,
    payer_login: row.payerLogin,
    challenge_login: row.accountLogin,
    idempotency_key: row.idempotencyKey,
  })
  let rollbackFailed = false
  for (const s of [...STEPS].reverse())
    if (s.undo && s.done(row))
      try {
        await s.undo(ctx, row, data)
      } catch (e) {
        rollbackFailed = true
        ctx.logger.log('error', 'prop purchase rollback failed', {
          purchase: row.id,
          rollback: s.step,
          err: String(e),
        })
      }
  const feeTaken = row.paymentOrder !== null
  const o = failedOutcome(step, feeTaken, rollbackFailed)
  await ctx.db
    .update(propPurchases)
    .set({
      status: o.status,
      paymentStatus: o.payment_status,
      activationStatus: o.activation_status,
      nextAction: o.next_action,
      canRetry: o.can_retry ? 1 : 0,
      canCancel: o.can_cancel ? 1 : 0,
      updatedAt: ctx.clock.now(),
    })
    .where(and(eq(propPurchases.id, row.id), owesRollbacks))
}

/**
 * The job `prop.purchases.recover`: ends what a crash left half-done. A purchase between steps for longer
 * than PURCHASE_STALE_MS stopped before its next step, as if that step had failed: it is rolled back the
 * same way (the customer may buy again); one whose rollbacks were interrupted gets them again. Safe on
 * several instances at once: each purchase is taken by a conditional update, and every rollback is keyed.
 */
export async function recoverPurchases(ctx: PropCtx) {
  const stale = ctx.clock.now() - PURCHASE_STALE_MS
  const rows = (await ctx.db
    .select()
    .from(propPurchases)
    .where(
      and(
        inArray(propPurchases.status, [PURCHASE.pending, PURCHASE.paid, PURCHASE.account_created]),
        lt(propPurchases.updatedAt, stale),
      ),
    )
    .limit(100)) as PurchaseRow[]
  let ended = 0
  for (const row of rows)
    if (await rollBack(ctx, row, stepAfter(row), `interrupted before ${stepAfter(row)}: ended by recovery`))
      ended++
  const unfinished = (await ctx.db
    .select()
    .from(propPurchases)
    .where(and(owesRollbacks, lt(propPurchases.updatedAt, stale)))
    .limit(100)) as PurchaseRow[]
  for (const row of unfinished) {
    // taken again first (its time moves on), so that two instances do not both run it
    const [mine] = await ctx.db
      .update(propPurchases)
      .set({ updatedAt: ctx.clock.now() })
      .where(and(eq(propPurchases.id, row.id), eq(propPurchases.updatedAt, row.updatedAt)))
      .returning({ id: propPurchases.id })
    if (mine) {
      await finishRollBack(ctx, row)
      ended++
    }
  }
  return { ended }
}
