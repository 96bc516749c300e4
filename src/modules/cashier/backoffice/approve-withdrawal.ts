import { and, eq } from 'drizzle-orm'
import type { Tx } from '../../../kernel/db/client'
import type { Work } from '../../../kernel/db/unit-of-work'
import type { UseCase } from '../../../kernel/use-case'
import { fromMinor, roundToMinor } from '../../accounts'
import type { CashierCtx } from '../context'
import { next, STATUS } from '../domain/status'
import { refuse, refuseSinceAsked } from '../errors'
import { type PaymentProvider, PayoutRefused } from '../providers/port'
import { cashierTransactions } from '../schema'
import { flag, move, noteAfter, staffViewOf, type TxRow } from '../transactions'
import { failPayout } from './payout-failed'
import {
  attempt,
  PAYOUT_ANSWER_MARGIN_MS,
  PAYOUT_SEND_LEASE_MS,
  rowIn,
  rowOf,
  type StaffAction,
  staff,
} from './shared'

/**
 * A withdrawal is money the account held when it was asked; a reversal since (a deposit charged back), or
 * losses of its open positions, may have left the account owing more than it has. Paying out then pays
 * money the customer owes the broker: refused while its own equity (equity less credit, as the stop-out
 * sees it) is below zero, until it is covered (or staff reject the withdrawal, which gives it back). Read
 * in the approval's transaction.
 */
async function inDebt(ctx: CashierCtx, tx: Tx, row: { login: number; currency: string }) {
  const { margin } = await ctx.accounts.marginIn(tx, row.login)
  const own = margin.equity - margin.credit
  if (own >= 0) return
  throw refuse(
    'TRANSACTION_STATE_CONFLICT',
    `account ${row.login} owes ${fromMinor(roundToMinor(-own, row.currency), row.currency)} ${row.currency} (a reversal or losses since the withdrawal was asked): it is not paid out; reject it, or approve it once the balance is covered`,
  )
}

/**
 * KYC may have changed since the withdrawal was asked (an identity rejected as forged, a document
 * expired): the payout is refused while the customer's KYC no longer allows withdrawals, before anything
 * is written (it stays pending; staff reject it, or approve it once KYC allows it again).
 */
async function kycAllows(ctx: CashierCtx, tx: Tx, brandId: number, row: { customerId: number }) {
  const gates = await ctx.kyc.gates(brandId, row.customerId, tx)
  if (gates.withdrawal_allowed) return
  throw refuse(
    'KYC_REQUIRED',
    `withdrawals need these KYC steps approved: ${gates.withdrawal_requires.join(', ')}; it is not paid out`,
  )
}

/**
 * Staff may have stopped the account (a dispute, compliance) or closed the customer's withdrawals since
 * the withdrawal was asked: it is not paid out (409 with the code the request would have had; it stays
 * pending, staff may reject it). Read through accounts' read model, which its writers invalidate on
 * commit: accounts offers no read of these in the caller's transaction.
 */
async function stillAllowed(ctx: CashierCtx, row: { login: number; customerId: number }) {
  const [account, customer] = await Promise.all([
    ctx.accounts.read.account(row.login),
    ctx.accounts.read.customer(row.customerId),
  ])
  if (account?.enable !== 1)
    throw refuseSinceAsked(
      'ACCOUNT_DISABLED',
      `account ${row.login} is disabled (since the withdrawal was asked): it is not paid out; reject it, or approve it once the account is enabled`,
    )
  if (customer?.withdrawalAllowed !== 1)
    throw refuseSinceAsked(
      'WITHDRAWAL_NOT_ALLOWED',
      `withdrawals are closed for customer ${row.customerId} (since the withdrawal was asked): it is not paid out; reject it, or approve it once they are allowed`,
    )
}

/**
 * The provider the withdrawal is paid out through. One this instance no longer has (taken out of the
 * configuration since the withdrawal was asked) is found before the approval commits: 503
 * PROVIDER_NOT_CONFIGURED, nothing sent, the withdrawal stays pending (configure it again, or reject it).
 */
function payoutOf(ctx: CashierCtx, row: { id: number; provider: string }) {
  const provider = ctx.providers.get(row.provider)
  if (provider) return provider
  throw refuseSinceAsked(
    'PROVIDER_NOT_CONFIGURED',
    `withdrawal ${row.id} is paid out through ${row.provider}, which is not configured here: nothing was sent and it stays pending; configure the provider again, or reject it`,
  )
}

/** Why an answer found the withdrawal no longer its to write (`answered`). */
const MEANWHILE =
  "after the withdrawal was recorded or moved meanwhile (lease lapsed, or another instance's record)"

/** The payout call given up at its deadline: an unknown outcome (the money may have left). */
class PayoutDeadline extends Error {
  constructor(provider: string, ms: number) {
    super(`${provider} did not answer within ${Math.round(ms / 100) / 10} s: the call was aborted`)
    this.name = 'PayoutDeadline'
  }
}

/**
 * The provider's payout call against its deadline (on ctx.clock: the send lease less
 * PAYOUT_ANSWER_MARGIN_MS): past it the call's signal aborts and it throws PayoutDeadline (an unknown
 * outcome, written under the lease with the margin to spare), so no send is still in flight, nor waited
 * for, once the lease lapsed and staff may record the withdrawal. An answer that comes after is logged.
 */
async function sendBy(
  ctx: CashierCtx,
  provider: PaymentProvider,
  p: { transactionId: number; amount: number; currency: string },
  deadline: number,
  /** What to record when the provider accepts after the deadline (a module that ignored the abort). */
  acceptedLate: (providerRef: string) => Promise<unknown>,
) {
  const abort = new AbortController()
  const ms = Math.max(0, deadline - ctx.clock.now())
  let timer: ReturnType<typeof setTimeout> | undefined
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const e = new PayoutDeadline(provider.id, ms)
      abort.abort(e)
      reject(e)
    }, ms)
  })
  const call = Promise.resolve().then(() => provider.startPayout(p, abort.signal))
  try {
    return await Promise.race([call, late])
  } finally {
    clearTimeout(timer)
    if (abort.signal.aborted)
      call.then(
        async (r) => {
          ctx.logger.log('error', 'cashier payout accepted after its deadline', {
            transaction: p.transactionId,
            provider_ref: r.providerRef,
          })
          // in the withdrawal's staff note, flagged: staff deciding paid or failed see that money left
          await acceptedLate(r.providerRef).catch((e: unknown) =>
            ctx.logger.log('error', 'cashier late payout answer not recorded', {
              transaction: p.transactionId,
              err: e instanceof Error ? e.message : String(e),
            }),
          )
        },
        () => undefined,
      )
  }
}

/**
 * Writes what the provider answered to the approval's payout, conditionally on its send lease: only while
 * the withdrawal is still payout_in_progress under this approval's lease. Lost (the lease lapsed and the
 * reconcile job moved it to manual_review, or staff recorded it since), nothing moves: the answer is
 * added to its staff note and it is flagged, so staff square it with what was recorded.
 */
async function answered(
  ctx: CashierCtx,
  sent: TxRow,
  lease: number,
  lost: string,
  write: (tx: Tx, work: Work, row: TxRow, now: number) => Promise<TxRow | null>,
) {
  const now = ctx.clock.now()
  await ctx.uow.run(async (tx, work) => {
    const row = await rowIn(tx, sent)
    const ours = row.status === STATUS.provider_confirmed && row.payoutSendingUntil === lease
    if (ours && (await write(tx, work, row, now))) return
    await flag(tx, row, lost, 'system', now)
  })
}

/**
 * Approves a withdrawal and sends its payout through the provider module. The approval commits with a
 * send lease (`payout_sending_until`, PAYOUT_SEND_LEASE_MS): until the provider answers, staff's paid and
 * payout-failed are refused (409 PAYOUT_BEING_SENT), so a payout the provider sends is never also
 * recorded failed (its hold returned), nor one it refuses recorded paid. Its answer is written under the
 * lease (`answered`): accepted, its reference; the provider's definite refusal (`PayoutRefused`) fails
 * the payout and returns the hold; any other failure to send (a timeout after the provider may have sent
 * it) keeps the hold and moves the withdrawal to manual_review, flagged: staff find out from the provider
 * and record it paid or failed. The call runs against a deadline, the lease less PAYOUT_ANSWER_MARGIN_MS
 * (`sendBy`): past it the call is aborted and its outcome taken as unknown (manual_review), written
 * under the lease, so a lapsed lease means no send is in flight. A staff note is added to `staff_note`
 * (noteAfter), never replacing it.
 */
export async function approveWithdrawal({
  ctx,
  brandId,
  staffId,
  id,
  input,
}: UseCase<CashierCtx, { note?: string }, StaffAction>) {
  const note = input.note ?? ''
  let lease = 0
  let provider: PaymentProvider | undefined
  await attempt(ctx, brandId, id, 'approve it', async (read, now) => {
    // a withdrawal its state no longer lets staff approve answers by its state (409), not by KYC
    if (read.kind !== 'withdrawal' || next('withdrawal', read.status, 'approve') === null) return null
    provider = payoutOf(ctx, read)
    await stillAllowed(ctx, read)
    return ctx.db.transaction(async (tx) => {
      // in the approval's transaction: a rejection that commits while it waits is seen
      const row = await rowIn(tx, read)
      await kycAllows(ctx, tx, brandId, row)
      await inDebt(ctx, tx, row)
      lease = now + (ctx.settings.payoutSendLeaseMs ?? PAYOUT_SEND_LEASE_MS)
      const staffNote = note.trim() ? noteAfter(row.staffNote, note) : undefined
      return move(tx, row, 'approve', staff(staffId), now, { payoutSendingUntil: lease, staffNote }, note)
    })
  })
  const row = await rowOf(ctx, brandId, id)
  const outcome = await sendBy(
    ctx,
    provider!,
    { transactionId: row.id, amount: row.amount - row.fee, currency: row.currency },
    lease - PAYOUT_ANSWER_MARGIN_MS,
    (ref) =>
      ctx.uow.run(async (tx) =>
        flag(
          tx,
          await rowIn(tx, row),
          `${row.provider} accepted the payout (${ref}) after its deadline: the money has left; check what was recorded`,
          'system',
          ctx.clock.now(),
        ),
      ),
  ).catch((e: unknown) => ({ error: e }))
  if ('providerRef' in outcome) {
    const ref = outcome.providerRef
    await answered(
      ctx,
      row,
      lease,
      `${row.provider} accepted the payout (${ref}) ${MEANWHILE}: the money has left; check what was recorded`,
      async (tx, _work, r) => {
        const [done] = await tx
          .update(cashierTransactions)
          .set({ providerRef: ref, payoutSendingUntil: 0 })
          .where(
            and(
              eq(cashierTransactions.id, r.id),
              eq(cashierTransactions.status, STATUS.provider_confirmed),
              eq(cashierTransactions.payoutSendingUntil, lease),
            ),
          )
          .returning()
        return (done as TxRow | undefined) ?? null
      },
    )
  } else if (outcome.error instanceof PayoutRefused) {
    const why = outcome.error.message
    ctx.logger.log('error', 'cashier payout refused by the provider', { transaction: id, err: why })
    await answered(
      ctx,
      row,
      lease,
      `${row.provider} refused the payout (${why}) ${MEANWHILE}: nothing was sent; check what was recorded`,
      (tx, work, r, now) => failPayout(ctx, tx, work, r, staff(staffId), now, 'the payout could not be sent'),
    )
  } else {
    const err = String(outcome.error)
    ctx.logger.log('error', 'cashier payout outcome unknown: held for review', { transaction: id, err })
    const unknown = `the payout was asked of ${row.provider} with no answer (${err}): it may have been sent; the hold is kept. Check with the provider, then mark it paid or its payout failed`
    await answered(ctx, row, lease, unknown, (tx, _work, r, now) =>
      move(
        tx,
        r,
        'payout_unknown',
        'system',
        now,
        {
          flagged: 1,
          staffNote: noteAfter(r.staffNote, unknown),
          reason: 'the payout is being checked',
          payoutSendingUntil: 0,
        },
        'payout sent with no answer from the provider',
      ),
    )
  }
  return staffViewOf(ctx, brandId, id)
}
