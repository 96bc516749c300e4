import { eq } from 'drizzle-orm'
import type { Tx } from '../../../kernel/db/client'
import type { UseCase } from '../../../kernel/use-case'
import { fromMinor, roundToMinor } from '../../accounts'
import type { CashierCtx } from '../context'
import { next } from '../domain/status'
import { refuse, refuseSinceAsked } from '../errors'
import { PayoutRefused } from '../providers/port'
import { cashierTransactions } from '../schema'
import { move, noteAfter } from '../transactions'
import { payoutFailed } from './payout-failed'
import { act, rowOf, type StaffAction, staff } from './shared'

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

/**
 * Approves a withdrawal and sends its payout through the provider module. The provider's definite
 * refusal (`PayoutRefused`) fails the payout and returns the hold; any other failure to send (a timeout
 * after the provider may have sent it) keeps the hold and moves the withdrawal to manual_review, flagged:
 * staff find out from the provider and record it paid or failed.
 */
export async function approveWithdrawal({
  ctx,
  brandId,
  staffId,
  id,
  input,
}: UseCase<CashierCtx, { note?: string }, StaffAction>) {
  const note = input.note ?? ''
  const view = await act(ctx, brandId, id, 'approve it', async (row, now) => {
    // a withdrawal its state no longer lets staff approve answers by its state (409), not by KYC
    if (row.kind !== 'withdrawal' || next('withdrawal', row.status, 'approve') === null) return null
    payoutOf(ctx, row)
    await stillAllowed(ctx, row)
    return ctx.db.transaction(async (tx) => {
      // in the approval's transaction: a rejection that commits while it waits is seen
      await kycAllows(ctx, tx, brandId, row)
      await inDebt(ctx, tx, row)
      return move(tx, row, 'approve', staff(staffId), now, { staffNote: note }, note)
    })
  })
  const row = await rowOf(ctx, brandId, id)
  let sent: { providerRef: string }
  try {
    sent = await payoutOf(ctx, row).startPayout({
      transactionId: row.id,
      amount: row.amount - row.fee,
      currency: row.currency,
    })
  } catch (e) {
    if (e instanceof PayoutRefused) {
      ctx.logger.log('error', 'cashier payout refused by the provider', { transaction: id, err: e.message })
      return payoutFailed({ ctx, brandId, staffId, id, input: { reason: 'the payout could not be sent' } })
    }
    ctx.logger.log('error', 'cashier payout outcome unknown: held for review', {
      transaction: id,
      err: String(e),
    })
    return act(ctx, brandId, id, 'hold its payout for review', (r, now) =>
      ctx.uow.run((tx) =>
        move(
          tx,
          r,
          'payout_unknown',
          'system',
          now,
          {
            flagged: 1,
            staffNote: noteAfter(
              r.staffNote,
              `the payout was asked of ${r.provider} with no answer (${String(e)}): it may have been sent; the hold is kept. Check with the provider, then mark it paid or its payout failed`,
            ),
            reason: 'the payout is being checked',
          },
          'payout sent with no answer from the provider',
        ),
      ),
    )
  }
  await ctx.db
    .update(cashierTransactions)
    .set({ providerRef: sent.providerRef })
    .where(eq(cashierTransactions.id, id))
  return { ...view, provider_ref: sent.providerRef }
}
