import { and, eq, inArray, lte } from 'drizzle-orm'
import type { UseCase } from '../../../kernel/use-case'
import type { CashierCtx } from '../context'
import { OPEN, STATUS } from '../domain/status'
import { cashierInbox, cashierTransactions } from '../schema'

/**
 * Job: asks the provider about deposits still open after a while. A state the provider reached and we
 * did not (a lost webhook) is applied through the inbox like a webhook (`recon:` event ids, so once); a
 * contradiction with what we did (it says failed, we credited) flags the transaction for a person.
 */
export async function reconcile({
  ctx,
  olderThanMs = 120_000,
}: UseCase<CashierCtx, undefined, { olderThanMs?: number }>) {
  const now = ctx.clock.now()
  const rows = await ctx.db
    .select()
    .from(cashierTransactions)
    .where(
      and(
        eq(cashierTransactions.kind, 'deposit'),
        inArray(cashierTransactions.status, [...OPEN, STATUS.credited]),
        lte(cashierTransactions.updatedAt, now - olderThanMs),
        eq(cashierTransactions.flagged, 0),
      ),
    )
    .limit(200)
  let applied = 0
  for (const row of rows) {
    const provider = ctx.providers.get(row.provider)
    if (!provider?.fetchStatus || !row.providerRef) continue
    const theirs = await provider.fetchStatus(row.providerRef).catch(() => null)
    if (!theirs || theirs === 'pending') continue
    const contradiction = row.status === STATUS.credited && (theirs === 'failed' || theirs === 'cancelled')
    if (contradiction) {
      await ctx.db
        .update(cashierTransactions)
        .set({ flagged: 1, staffNote: `reconciliation: provider says ${theirs}` })
        .where(eq(cashierTransactions.id, row.id))
      continue
    }
    if (row.status === STATUS.credited && theirs === 'confirmed') continue
    const body = provider.simulator?.body(`recon-${row.id}-${theirs}`, theirs as 'confirmed', {
      token: row.providerRef.replace(/^pay_/, ''),
      reference: String(row.id),
      amount: row.amount,
      currency: row.currency,
    })
    if (!body) continue
    const parsed = provider.parseWebhook(body)
    if ('error' in parsed) continue
    const [ins] = await ctx.db
      .insert(cashierInbox)
      .values({
        brandId: row.brandId,
        provider: row.provider,
        eventId: `recon:${row.id}:${theirs}`,
        body,
        receivedAt: now,
      })
      .onConflictDoNothing()
      .returning({ id: cashierInbox.id })
    if (ins) applied++
  }
  return applied
}
