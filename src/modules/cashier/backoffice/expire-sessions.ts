import { and, eq, inArray, lte } from 'drizzle-orm'
import type { UseCase } from '../../../kernel/use-case'
import type { CashierCtx } from '../context'
import { STATUS } from '../domain/status'
import { cashierTransactions } from '../schema'
import { move, type TxRow } from '../transactions'
import { queueProviderState, walkById } from './reconcile'

/**
 * How long a deposit's hosted payment session stays open (Stripe's Checkout Sessions expire after 24
 * hours too): a deposit still pending_payment past it, its payment never made, is ended (cancelled), so
 * it stops counting toward the KYC deposit limit.
 */
export const PAYMENT_SESSION_TTL_MS = 24 * 3_600_000

/**
 * Ends a deposit's payment session at its provider and then the deposit, when nobody paid it: the
 * provider ends a session only while it is unpaid (of a payment and an expiry, one wins there), so a
 * payment made meanwhile is never lost: its state (paid, declined, refunded) is applied as
 * reconciliation applies it, and a paid one is credited. `ended`: the deposit was ended; `paid`: the
 * provider has a payment (or its outcome) for it; `unknown`: its provider cannot end sessions or could
 * not be asked; `moved`: another writer changed the deposit first.
 */
export async function endUnpaidSession(
  ctx: CashierCtx,
  row: TxRow,
  how: { action: 'expire' | 'cancel'; actor: string; reason: string; note: string },
): Promise<'ended' | 'paid' | 'unknown' | 'moved'> {
  const provider = ctx.providers.get(row.provider)
  // a provider that sends webhooks holds a session a customer could still pay: it ends it first (a bank
  // wire has none; a provider no longer loaded takes no payment here)
  if (provider?.webhooks) {
    if (!provider.expireSession || !row.providerRef) return 'unknown'
    const ref = row.providerRef
    const ended = await provider.expireSession(ref).catch(() => null)
    if (ended === null) return 'unknown'
    if (!ended) {
      const theirs = await provider.fetchStatus?.(ref).catch(() => null)
      if (!theirs) return 'unknown'
      if (theirs !== 'cancelled') {
        if (theirs !== 'pending') await queueProviderState(ctx, provider, row, theirs, ctx.clock.now())
        return 'paid'
      }
    }
  }
  const now = ctx.clock.now()
  const done = await ctx.uow.run((tx) =>
    move(tx, row, how.action, how.actor, now, { reason: how.reason }, how.note),
  )
  return done ? 'ended' : 'moved'
}

/**
 * Job: deposits left pending_payment past PAYMENT_SESSION_TTL_MS with a provider that can end its
 * sessions (card providers; a bank wire has none and waits for staff) are ended after asking the
 * provider (`endUnpaidSession`), in id order from where the last run stopped.
 */
export async function expireSessions({
  ctx,
  ttlMs = PAYMENT_SESSION_TTL_MS,
}: UseCase<CashierCtx, undefined, { ttlMs?: number }>) {
  const providers = [...ctx.providers.values()].filter((p) => p.webhooks && p.expireSession).map((p) => p.id)
  if (providers.length === 0) return 0
  let expired = 0
  await walkById(
    ctx,
    'cashier:expire:after',
    and(
      eq(cashierTransactions.kind, 'deposit'),
      eq(cashierTransactions.status, STATUS.pending_payment),
      inArray(cashierTransactions.provider, providers),
      lte(cashierTransactions.createdAt, ctx.clock.now() - ttlMs),
    ),
    async (row) => {
      const r = await endUnpaidSession(ctx, row, {
        action: 'expire',
        actor: 'system',
        reason: 'the payment session expired unpaid',
        note: `payment session unpaid after ${ttlMs / 3_600_000} h: ended at the provider`,
      })
      if (r === 'ended') expired++
    },
  )
  return expired
}
