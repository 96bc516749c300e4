import { and, asc, desc, eq, gt, lt, or, sql } from 'drizzle-orm'
import type { Brand } from '../../kernel/brand/registry'
import type { Tx } from '../../kernel/db/client'
import { rootMessage } from '../../kernel/db/errors'
import { rowsOf, statement } from '../../kernel/db/statement'
import type { Work } from '../../kernel/db/unit-of-work'
import { fromMinor } from '../accounts'
import { type CashierCtx, secretsOf } from './context'
import { heldAfterReversal, next, STATUS, statusName } from './domain/status'
import { refuse } from './errors'
import type { ParsedWebhook } from './providers/port'
import { cashierHistory, cashierInbox, cashierTransactions } from './schema'
import { credit, flag, LostRace, move, noteAfter, record, reverse, type TxRow } from './transactions'

const CLAIM_MS = 30_000
/** The inbox event ids reconciliation queues the provider's state under (backoffice/reconcile.ts). */
export const RESTATED = 'recon:'
const MAX_ATTEMPTS = 10
/**
 * Inbox rows one run of `cashier.inbox` processes at most, each in a transaction of its own. At the edge
 * (a Worker's scheduled(), every minute) every job due shares one invocation's 1,000 subrequests, and
 * each statement is one: a run there takes fewer, the rest are left to the next.
 */
export const INBOX_PER_RUN = { server: 200, edge: 5 }

const depositStatement = statement((qb) =>
  qb
    .select()
    .from(cashierTransactions)
    .where(
      and(
        eq(cashierTransactions.id, sql.placeholder('id')),
        eq(cashierTransactions.brandId, sql.placeholder('brandId')),
        eq(cashierTransactions.provider, sql.placeholder('provider')),
        eq(cashierTransactions.kind, 'deposit'),
      ),
    ),
)

/** An event stored in the inbox with its outcome, in the transaction that applied it (every webhook). */
const processedStatement = statement((qb) =>
  qb
    .insert(cashierInbox)
    .values({
      brandId: sql.placeholder('brandId'),
      provider: sql.placeholder('provider'),
      eventId: sql.placeholder('eventId'),
      body: sql.placeholder('body'),
      state: sql.placeholder('state'),
      result: sql.placeholder('result'),
      attempts: 1,
      receivedAt: sql.placeholder('now'),
      processedAt: sql.placeholder('now'),
    })
    .onConflictDoNothing()
    .returning({ id: cashierInbox.id }),
)

/**
 * Applies one provider update to its deposit in the caller's transaction; returns what happened (kept
 * on the inbox row). A confirmation of another amount or currency goes to manual review; a confirmation
 * credits at once; a refund or dispute of a credited deposit takes it back, and one of another amount or
 * currency (a partial refund) flags it for staff and moves nothing. One of a deposit not credited yet
 * (before its capture, or in review) is recorded, flagged and held in review, where a credit takes only
 * what the provider still holds. A refund or dispute of a deposit taken back already (the provider takes
 * it again), and a failure or cancellation of a credited one, flag it for staff and move nothing; the
 * provider's notice of a refund staff made (`echoesStaffRefund`) is recorded only. Whatever else does not
 * apply to the current status changes nothing (late, repeated or out-of-order events).
 */
async function applyUpdate(
  ctx: CashierCtx,
  tx: Tx,
  work: Work,
  brandId: number,
  provider: string,
  u: ParsedWebhook,
  now: number,
  /** Reconciliation's report of the provider's state (`queueProviderState`), not an event of its own. */
  restated = false,
): Promise<{ state: 'processed' | 'ignored'; result: string }> {
  const [row] = rowsOf(
    cashierTransactions,
    await depositStatement(tx, { id: u.transactionId, brandId, provider }),
  )
  if (!row) return { state: 'ignored', result: 'no such deposit of this provider and brand' }
  const actor = `provider:${provider}`
  const ref = row.providerRef ?? u.providerRef
  // the capture of a deposit whose reversal came first: what it confirmed adds to what the review may
  // credit (provider_amount, net of the reversal); nothing is credited without staff
  if (u.update === 'confirmed' && row.status === STATUS.manual_review && awaitsCapture(row)) {
    const net = heldAfterReversal(row, { amount: -u.amount, currency: u.currency })
    await note(
      tx,
      row,
      { ...net, providerCurrency: u.currency, providerRef: ref },
      actor,
      `provider confirmed ${fromMinor(u.amount, u.currency)} ${u.currency} after taking money back: held for review; a credit takes only ${fromMinor(Math.max(0, net.providerAmount), u.currency)} ${u.currency}`,
      now,
    )
    return { state: 'processed', result: 'manual_review: a capture after a reversal' }
  }
  if (u.update === 'confirmed' && (u.amount !== row.amount || u.currency !== row.currency)) {
    const r = await move(
      tx,
      row,
      'mismatch',
      actor,
      now,
      {
        providerRef: ref,
        providerAmount: u.amount,
        providerCurrency: u.currency,
        reason: 'the payment is being reviewed',
      },
      `provider confirmed ${fromMinor(u.amount, u.currency)} ${u.currency}, expected ${fromMinor(row.amount, row.currency)} ${row.currency}`,
    )
    return r ? { state: 'processed', result: 'manual_review: amount or currency differs' } : ignored(row)
  }
  if (u.update === 'refunded' || u.update === 'chargeback') {
    // a partial refund or dispute is not the deposit's reversal: nothing moves until staff decide
    if (row.status === STATUS.credited && (u.amount !== row.amount || u.currency !== row.currency)) {
      await flag(
        tx,
        row,
        `provider reported ${u.update} of ${fromMinor(u.amount, u.currency)} ${u.currency} for a deposit of ${fromMinor(row.amount, row.currency)} ${row.currency}: not applied; review it`,
        'system',
        now,
      )
      return { state: 'processed', result: `flagged: ${u.update} of another amount or currency` }
    }
    // a deposit taken back already (the provider's refund or chargeback, or staff's refund): the provider
    // takes the money again (a chargeback after a refund). Not the customer's to pay twice: the balance is
    // untouched, staff are told. Reconciliation restating the state we hold is no news.
    if (row.status === STATUS.refunded || row.status === STATUS.chargeback) {
      if (restated && statusName(row.status) === u.update) return ignored(row)
      // the provider's own notice of the refund staff made (they refunded it at the provider): the same
      // money, reported once. Recorded, not flagged; a second one, or a chargeback, is the provider taking
      // it again
      if (await echoesStaffRefund(tx, row, u)) {
        await record(
          tx,
          row.id,
          row.status,
          row.status,
          actor,
          `provider confirmed the refund of ${fromMinor(u.amount, u.currency)} ${u.currency}`,
          now,
        )
        return { state: 'processed', result: "recorded: the provider's notice of the staff refund" }
      }
      await flag(
        tx,
        row,
        `provider took it again: it reported ${u.update} of ${fromMinor(u.amount, u.currency)} ${u.currency} for a deposit already ${statusName(row.status)}; the balance is not charged twice: recover it from the provider, or collect it`,
        'system',
        now,
      )
      return {
        state: 'processed',
        result: `flagged: ${u.update} of a deposit already ${statusName(row.status)}`,
      }
    }
    // money the provider took back before it was credited (out of order, or a deposit still open or in
    // review): recorded and held for staff, and what a later credit may take is what is left
    if (row.status === STATUS.manual_review || next('deposit', row.status, 'reversal') !== null) {
      const what = `provider reported ${u.update} of ${fromMinor(u.amount, u.currency)} ${u.currency} before the deposit was credited`
      const set = {
        ...heldAfterReversal(row, u),
        flagged: 1,
        staffNote: noteAfter(
          row.staffNote,
          `${what}: held for review; a credit takes only what the provider still holds (provider_amount)`,
        ),
        reason: 'the payment is being reviewed',
      }
      const r =
        row.status === STATUS.manual_review
          ? await note(tx, row, set, actor, what, now)
          : await move(tx, row, 'reversal', actor, now, set, what)
      return r ? { state: 'processed', result: `manual_review: ${u.update} before the credit` } : ignored(row)
    }
    const r = await reverse(ctx, tx, work, row, u.update, actor, now)
    return r ? { state: 'processed', result: `status ${r.status}` } : ignored(row)
  }
  // a failure or cancellation of a deposit credited already contradicts the money we credited: staff
  // look (as reconciliation flags the same fact); nothing moves
  if ((u.update === 'failed' || u.update === 'cancelled') && row.status === STATUS.credited) {
    await flag(
      tx,
      row,
      `provider reported ${u.update} for a credited deposit: check with the provider whether the money arrived`,
      'system',
      now,
    )
    return { state: 'processed', result: `flagged: ${u.update} of a credited deposit` }
  }
  const reason =
    u.update === 'failed' ? 'the payment was declined' : u.update === 'cancelled' ? 'cancelled' : ''
  const r = await move(tx, row, u.update, actor, now, {
    providerRef: ref,
    ...(reason ? { reason } : {}),
    // what the provider confirmed is what a later review credits, not an earlier mismatch's figure
    ...(u.update === 'confirmed' ? { providerAmount: u.amount, providerCurrency: u.currency } : {}),
  })
  if (!r) return ignored(row)
  if (r.status === STATUS.provider_confirmed) {
    const c = await credit(ctx, tx, work, r, actor, now)
    return { state: 'processed', result: c?.status === STATUS.credited ? 'credited' : 'credit_failed' }
  }
  return { state: 'processed', result: `status ${r.status}` }
}

/**
 * A provider's `refunded` of the whole deposit (its amount and currency) that staff refunded, with no
 * provider reversal recorded since the staff refund (its notice, or a refund or chargeback flagged as
 * taken again): the provider reporting the refund staff made there, not a second taking.
 */
async function echoesStaffRefund(tx: Tx, row: TxRow, u: ParsedWebhook) {
  if (u.update !== 'refunded' || row.status !== STATUS.refunded) return false
  if (u.amount !== row.amount || u.currency !== row.currency) return false
  const [refund] = await tx
    .select({ id: cashierHistory.id, actor: cashierHistory.actor })
    .from(cashierHistory)
    .where(
      and(
        eq(cashierHistory.transactionId, row.id),
        eq(cashierHistory.fromStatus, STATUS.credited),
        eq(cashierHistory.toStatus, STATUS.refunded),
      ),
    )
    .orderBy(desc(cashierHistory.id))
    .limit(1)
  if (!refund?.actor.startsWith('staff:')) return false
  // anything recorded on the refunded deposit since is the provider's: its notice came already, or it
  // took the money again (flagged)
  const [since] = await tx
    .select({ id: cashierHistory.id })
    .from(cashierHistory)
    .where(and(eq(cashierHistory.transactionId, row.id), gt(cashierHistory.id, refund.id)))
    .limit(1)
  return !since
}

/** A deposit a reversal sent to review before any confirmation was recorded (its capture is to come). */
const awaitsCapture = (row: TxRow) =>
  row.flagged === 1 && row.providerAmount !== null && row.providerCurrency === null

/** Changes a deposit in review without moving it, with a history row (status to itself). */
async function note(tx: Tx, row: TxRow, set: Partial<TxRow>, actor: string, text: string, now: number) {
  const [r] = await tx
    .update(cashierTransactions)
    .set({ ...set, updatedAt: now })
    .where(and(eq(cashierTransactions.id, row.id), eq(cashierTransactions.status, row.status)))
    .returning()
  if (r) await record(tx, row.id, row.status, row.status, actor, text, now)
  return r ?? null
}

const ignored = (row: { status: number }) => ({
  state: 'ignored' as const,
  result: `does not apply to status ${row.status}`,
})

/**
 * Processes one inbox row under a claim (another instance takes it only after the claim lapses): the
 * update and the row's outcome commit together, so a crash before the commit leaves it to be processed
 * again, and after it nothing is done twice.
 */
async function processInbox(ctx: CashierCtx, id: number): Promise<string | null> {
  const now = ctx.clock.now()
  const [claimed] = await ctx.db
    .update(cashierInbox)
    .set({ state: 'processing', claimedUntil: now + CLAIM_MS })
    .where(
      and(
        eq(cashierInbox.id, id),
        or(
          eq(cashierInbox.state, 'received'),
          and(eq(cashierInbox.state, 'processing'), lt(cashierInbox.claimedUntil, now)),
        ),
      ),
    )
    .returning()
  if (!claimed) return null
  const provider = ctx.providers.get(claimed.provider)
  const parsed = provider?.parseWebhook(claimed.body)
  try {
    return await ctx.uow.run(async (tx, work) => {
      const outcome =
        !parsed || 'error' in parsed
          ? { state: 'ignored' as const, result: parsed ? parsed.error : 'provider not loaded' }
          : await applyUpdate(
              ctx,
              tx,
              work,
              claimed.brandId,
              claimed.provider,
              parsed,
              ctx.clock.now(),
              claimed.eventId.startsWith(RESTATED),
            )
      const [done] = await tx
        .update(cashierInbox)
        .set({
          state: outcome.state,
          result: outcome.result,
          processedAt: ctx.clock.now(),
          attempts: claimed.attempts + 1,
        })
        .where(and(eq(cashierInbox.id, id), eq(cashierInbox.claimedUntil, claimed.claimedUntil)))
        .returning({ id: cashierInbox.id })
      // our claim lapsed and another processor took the row: roll back, it does the work
      if (!done) throw new LostRace(id)
      return outcome.result
    })
  } catch (e) {
    const attempts = claimed.attempts + 1
    await ctx.db
      .update(cashierInbox)
      .set({
        state: attempts >= MAX_ATTEMPTS ? 'failed' : 'received',
        result: rootMessage(e),
        attempts,
        claimedUntil: 0,
      })
      .where(and(eq(cashierInbox.id, id), eq(cashierInbox.claimedUntil, claimed.claimedUntil)))
    if (!(e instanceof LostRace))
      ctx.logger.log('error', 'cashier webhook processing failed', {
        inbox: id,
        err: rootMessage(e),
      })
    return null
  }
}

/**
 * Inbox rows not processed yet (a crash between the inbox write and the credit, a failed attempt), the
 * oldest first, INBOX_PER_RUN a run.
 */
export async function drainInbox(ctx: CashierCtx) {
  const now = ctx.clock.now()
  const due = await ctx.db
    .select({ id: cashierInbox.id })
    .from(cashierInbox)
    .where(
      or(
        eq(cashierInbox.state, 'received'),
        and(eq(cashierInbox.state, 'processing'), lt(cashierInbox.claimedUntil, now)),
      ),
    )
    .orderBy(asc(cashierInbox.id))
    .limit(ctx.edge ? INBOX_PER_RUN.edge : INBOX_PER_RUN.server)
  let n = 0
  for (const r of due) if ((await processInbox(ctx, r.id)) !== null) n++
  return n
}

/** The event was in the inbox already: the unit of work that applied it again is rolled back. */
class Duplicate extends Error {}

/**
 * POST /cashier/webhook/{provider}: the signature is verified over the exact bytes before anything
 * else. The update is applied and the event stored in the inbox (unique per brand, provider and event id) in
 * one transaction, committed before the answer: a repeated event finds its row, rolls back and answers
 * 200 doing nothing. If applying fails, the event is stored alone, still to process, and the inbox job
 * applies it later; if even that fails, the answer is an error and the provider sends it again.
 */
export async function receiveWebhook(
  ctx: CashierCtx,
  brand: Brand,
  providerId: string,
  headers: Headers,
  body: string,
) {
  const provider = ctx.providers.get(providerId)
  const secrets = secretsOf(ctx, brand.name, providerId)
  if (!provider?.webhooks || secrets.length === 0)
    throw refuse('PROVIDER_NOT_FOUND', `no webhooks of ${providerId} are accepted on this brand`)
  if (!provider.verifyWebhook(headers, body, secrets, ctx.clock.now())) {
    ctx.logger.log('warn', 'cashier webhook refused: bad signature', {
      provider: providerId,
      brand: brand.id,
    })
    throw refuse('INVALID_SIGNATURE', 'the webhook signature is missing, wrong or too old')
  }
  const type = (headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase()
  if (type !== 'application/json') throw refuse('INVALID_DATA', 'body: content-type must be application/json')
  const parsed = provider.parseWebhook(body)
  if ('error' in parsed) throw refuse('INVALID_DATA', parsed.error)
  const row = { brandId: brand.id, provider: providerId, eventId: parsed.eventId, body }
  try {
    // one commit: the update and its inbox row (already processed) land together or not at all
    await ctx.uow.run(async (tx, work) => {
      const now = ctx.clock.now()
      const outcome = await applyUpdate(ctx, tx, work, brand.id, providerId, parsed, now)
      const stored = await processedStatement(tx, { ...row, ...outcome, now })
      if (stored.rows.length === 0) throw new Duplicate()
    })
  } catch (e) {
    if (e instanceof Duplicate) return { received: true, duplicate: true }
    const err = rootMessage(e)
    ctx.logger.log('error', 'cashier webhook processing failed: stored for the inbox job', {
      provider: providerId,
      err,
    })
    const [stored] = await ctx.db
      .insert(cashierInbox)
      .values({ ...row, result: err, attempts: 1, receivedAt: ctx.clock.now() })
      .onConflictDoNothing()
      .returning({ id: cashierInbox.id })
    if (!stored) return { received: true, duplicate: true }
  }
  return { received: true, duplicate: false }
}
