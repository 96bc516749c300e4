import { and, asc, eq, gt, inArray, lte, type SQL } from 'drizzle-orm'
import type { UseCase } from '../../../kernel/use-case'
import type { CashierCtx } from '../context'
import { OPEN, type ProviderUpdate, STATUS } from '../domain/status'
import type { PaymentProvider } from '../providers/port'
import { cashierInbox, cashierTransactions } from '../schema'
import { type TxRow, withNote } from '../transactions'
import { RESTATED } from '../webhooks'
import { holdLapsedPayouts } from './lapsed-payouts'

/** Rows a job reads at once; a run reads pages until its bound. */
const PAGE = 100
/**
 * What one run of a job visits at most (a provider is asked about each), and how long it may take. At the
 * edge (a Worker's scheduled(), every minute) every job due shares one invocation's 1,000 subrequests,
 * and each statement, cache call and provider call is one: a run there visits a page.
 */
export const MAX_ROWS = { server: 1000, edge: PAGE }
const MAX_RUN_MS = 30_000

/**
 * Visits the transactions `where` selects in id order, from where the previous run stopped (its cursor
 * is kept in the shared cache under `cursorKey`) to the end, then from the start again: however many
 * there are, and whichever of them never change, every one is visited in turn. A run stops after
 * `maxRows` rows (MAX_ROWS: fewer at the edge) or MAX_RUN_MS; the cursor is saved after each page, so a
 * run cut off (a failure, a Worker invocation out of subrequests) still moves it past the pages it
 * finished; without the cache (or a cursor lost) it starts from the first.
 */
export async function walkById(
  ctx: CashierCtx,
  cursorKey: string,
  where: SQL | undefined,
  visit: (row: TxRow) => Promise<void>,
  maxRows = ctx.edge ? MAX_ROWS.edge : MAX_ROWS.server,
) {
  const startedMs = performance.now()
  let after = Number((await ctx.store.get(cursorKey).catch(() => null)) ?? 0) || 0
  let visited = 0
  for (;;) {
    const want = Math.min(PAGE, maxRows - visited)
    const rows = await ctx.db
      .select()
      .from(cashierTransactions)
      .where(and(where, gt(cashierTransactions.id, after)))
      .orderBy(asc(cashierTransactions.id))
      .limit(want)
    for (const row of rows) {
      await visit(row)
      after = row.id
      visited++
    }
    // the end: the next run starts from the first again (this one too, when it found nothing past its cursor)
    const end = rows.length < want
    if (end) {
      const empty = visited === 0 && after !== 0
      after = 0
      if (empty) continue
    }
    // after each page: a run cut off later (a failure, the edge's subrequests spent) keeps what it did
    await ctx.store.set(cursorKey, String(after), 7 * 86_400_000).catch(() => undefined)
    if (end || visited >= maxRows || performance.now() - startedMs > MAX_RUN_MS) break
  }
  return visited
}

/**
 * A state the provider reached and we did not (a lost webhook), applied through the inbox like a webhook
 * (`recon:` event ids, so once); true when it was queued.
 */
export async function queueProviderState(
  ctx: CashierCtx,
  provider: PaymentProvider,
  row: TxRow,
  theirs: ProviderUpdate,
  now: number,
) {
  if (!row.providerRef) return false
  const body = provider.simulator?.body(`recon-${row.id}-${theirs}`, theirs as 'confirmed', {
    token: row.providerRef.replace(/^pay_/, ''),
    reference: String(row.id),
    amount: row.amount,
    currency: row.currency,
  })
  if (!body) return false
  const parsed = provider.parseWebhook(body)
  if ('error' in parsed) return false
  const [ins] = await ctx.db
    .insert(cashierInbox)
    .values({
      brandId: row.brandId,
      provider: row.provider,
      eventId: `${RESTATED}${row.id}:${theirs}`,
      body,
      receivedAt: now,
    })
    .onConflictDoNothing()
    .returning({ id: cashierInbox.id })
  return !!ins
}

/**
 * Job: asks the provider about deposits still open after a while, and credited ones (a refund or
 * dispute whose webhook was lost), flagged or not (a flag tells staff of one thing; a refund the provider
 * makes later is still taken back), in id order from where the last run stopped (`walkById`), so none is
 * left unvisited however many there are. A state the provider reached and we did not is applied through
 * the inbox (`queueProviderState`); a contradiction with what we did (it says failed, we credited) flags
 * the transaction for a person, once (a flagged one whose staff note says so already is not flagged
 * again). First, withdrawals whose payout send lease lapsed go to manual_review (`holdLapsedPayouts`).
 */
export async function reconcile({
  ctx,
  olderThanMs = 120_000,
  maxRows,
}: UseCase<CashierCtx, undefined, { olderThanMs?: number; maxRows?: number }>) {
  const now = ctx.clock.now()
  await holdLapsedPayouts(ctx, now)
  let applied = 0
  await walkById(
    ctx,
    'cashier:reconcile:after',
    and(
      eq(cashierTransactions.kind, 'deposit'),
      inArray(cashierTransactions.status, [...OPEN, STATUS.credited]),
      lte(cashierTransactions.updatedAt, now - olderThanMs),
    ),
    async (row) => {
      const provider = ctx.providers.get(row.provider)
      if (!provider?.fetchStatus || !row.providerRef) return
      const theirs = await provider.fetchStatus(row.providerRef).catch(() => null)
      if (!theirs || theirs === 'pending') return
      const contradiction = row.status === STATUS.credited && (theirs === 'failed' || theirs === 'cancelled')
      if (contradiction) {
        const note = `reconciliation: provider says ${theirs}`
        // visited again every round: told once (what staff_note holds keeps the newest note whole)
        if (row.flagged === 1 && row.staffNote.includes(note)) return
        await ctx.db
          .update(cashierTransactions)
          .set({ flagged: 1, staffNote: withNote(note) })
          .where(eq(cashierTransactions.id, row.id))
        return
      }
      if (row.status === STATUS.credited && theirs === 'confirmed') return
      if (await queueProviderState(ctx, provider, row, theirs, now)) applied++
    },
    maxRows,
  )
  return applied
}
