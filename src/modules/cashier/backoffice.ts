import { and, desc, eq, inArray, lt, lte } from 'drizzle-orm'
import { ApiError } from '../../kernel/http/errors'
import { fromMinor, toMinor } from '../accounts'
import type { CashierCtx } from './context'
import { OPEN, STATUS, type StatusName } from './domain/status'
import { WithdrawalPaid } from './events'
import { cashierInbox, cashierMethods, cashierOverrides, cashierTransactions } from './schema'
import {
  credit,
  money,
  move,
  pageOf,
  releaseHold,
  reverse,
  staffTxView,
  staffViewOf,
  type TxRow,
  txNotFound,
  wrongState,
} from './transactions'

const MAX_CREDIT_ATTEMPTS = 5

async function rowOf(ctx: CashierCtx, brandId: number, id: number) {
  const [row] = await ctx.db
    .select()
    .from(cashierTransactions)
    .where(and(eq(cashierTransactions.id, id), eq(cashierTransactions.brandId, brandId)))
  if (!row) throw txNotFound()
  return row
}

export async function searchTransactions(
  ctx: CashierCtx,
  brandId: number,
  q: {
    status?: StatusName
    kind?: 'deposit' | 'withdrawal'
    customer?: number
    login?: number
    flagged?: number
    cursor?: number
    limit?: number
  },
) {
  const limit = q.limit ?? 50
  const rows = await ctx.db
    .select()
    .from(cashierTransactions)
    .where(
      and(
        eq(cashierTransactions.brandId, brandId),
        q.status ? eq(cashierTransactions.status, STATUS[q.status]) : undefined,
        q.kind ? eq(cashierTransactions.kind, q.kind) : undefined,
        q.customer !== undefined ? eq(cashierTransactions.customerId, q.customer) : undefined,
        q.login !== undefined ? eq(cashierTransactions.login, q.login) : undefined,
        q.flagged !== undefined ? eq(cashierTransactions.flagged, q.flagged) : undefined,
        q.cursor ? lt(cashierTransactions.id, q.cursor) : undefined,
      ),
    )
    .orderBy(desc(cashierTransactions.id))
    .limit(limit + 1)
  return pageOf(ctx, rows, limit, staffTxView)
}

export async function staffTransaction(ctx: CashierCtx, brandId: number, id: number) {
  await rowOf(ctx, brandId, id)
  return staffViewOf(ctx, id)
}

const staff = (id: number) => `staff:${id}`

/** Runs one staff action on a transaction; 409 when its status does not allow it. */
async function act(
  ctx: CashierCtx,
  brandId: number,
  id: number,
  what: string,
  fn: (row: TxRow, now: number) => Promise<TxRow | null>,
) {
  const row = await rowOf(ctx, brandId, id)
  const done = await fn(row, ctx.clock.now())
  if (!done) throw wrongState(row, what)
  return staffViewOf(ctx, id)
}

/** Manual review: credit the deposit, or close it as failed. */
export const resolveReview = (
  ctx: CashierCtx,
  brandId: number,
  staffId: number,
  id: number,
  input: { decision: 'credit' | 'fail'; note: string; reason?: string },
) =>
  act(ctx, brandId, id, `resolve it (${input.decision})`, (row, now) =>
    ctx.uow.run(async (tx, work) => {
      if (row.kind !== 'deposit') return null
      if (input.decision === 'fail')
        return move(
          tx,
          row,
          'resolve_fail',
          staff(staffId),
          now,
          { reason: input.reason ?? 'the payment failed', staffNote: input.note },
          input.note,
        )
      const r = await credit(
        ctx,
        tx,
        work,
        { ...row, staffNote: input.note },
        staff(staffId),
        now,
        'resolve_credit',
      )
      return r?.status === STATUS.credited ? r : null
    }),
  )

/** Retries the credit of a credit_failed deposit now. */
export const retryCredit = (ctx: CashierCtx, brandId: number, staffId: number, id: number, note: string) =>
  act(ctx, brandId, id, 'retry the credit', (row, now) =>
    ctx.uow.run(async (tx, work) => {
      if (row.status !== STATUS.credit_failed) return null
      const r = await credit(ctx, tx, work, row, staff(staffId), now, 'credit', note)
      return r?.status === STATUS.credited ? r : null
    }),
  )

/** A bank wire arrived: the amount received decides between crediting and manual review. */
export const confirmWire = (ctx: CashierCtx, brandId: number, staffId: number, id: number, amount: number) =>
  act(ctx, brandId, id, 'confirm a wire', async (row, now) => {
    if (row.provider !== 'wire' || row.kind !== 'deposit') return null
    const received = toMinor(amount, row.currency)
    if (received === null || received <= 0)
      throw new ApiError(
        400,
        'INVALID_DATA',
        `amount: a positive amount with the decimals of ${row.currency}`,
      )
    return ctx.uow.run(async (tx, work) => {
      if (received !== row.amount)
        return move(
          tx,
          row,
          'mismatch',
          staff(staffId),
          now,
          {
            providerAmount: received,
            providerCurrency: row.currency,
            reason: 'the transfer is being reviewed',
          },
          `received ${fromMinor(received, row.currency)} ${row.currency}`,
        )
      const r = await move(tx, row, 'confirmed', staff(staffId), now, {}, 'wire received')
      return r && credit(ctx, tx, work, r, staff(staffId), now)
    })
  })

/** Refunds a credited deposit to its payer: the balance must cover it. */
export const refund = (ctx: CashierCtx, brandId: number, staffId: number, id: number, note: string) =>
  act(ctx, brandId, id, 'refund it', (row, now) =>
    ctx.uow.run((tx, work) =>
      row.kind === 'deposit'
        ? reverse(ctx, tx, work, row, 'refund', staff(staffId), now, note)
        : Promise.resolve(null),
    ),
  )

/** Approves a withdrawal and sends its payout through the provider module. */
export async function approveWithdrawal(
  ctx: CashierCtx,
  brandId: number,
  staffId: number,
  id: number,
  note: string,
) {
  const view = await act(ctx, brandId, id, 'approve it', (row, now) =>
    ctx.db.transaction((tx) =>
      row.kind === 'withdrawal'
        ? move(tx, row, 'approve', staff(staffId), now, { staffNote: note }, note)
        : Promise.resolve(null),
    ),
  )
  const row = await rowOf(ctx, brandId, id)
  try {
    const p = await ctx.providers
      .get(row.provider)!
      .startPayout({ transactionId: row.id, amount: row.amount - row.fee, currency: row.currency })
    await ctx.db
      .update(cashierTransactions)
      .set({ providerRef: p.providerRef })
      .where(eq(cashierTransactions.id, id))
  } catch (e) {
    ctx.logger.log('error', 'cashier payout failed to start', { transaction: id, err: String(e) })
    return payoutFailed(ctx, brandId, staffId, id, 'the payout could not be sent')
  }
  return { ...view, provider_ref: (await rowOf(ctx, brandId, id)).providerRef }
}

export const rejectWithdrawal = (
  ctx: CashierCtx,
  brandId: number,
  staffId: number,
  id: number,
  reason: string,
) =>
  act(ctx, brandId, id, 'reject it', (row, now) =>
    ctx.uow.run(async (tx, work) => {
      if (row.kind !== 'withdrawal') return null
      const r = await move(tx, row, 'reject', staff(staffId), now, { reason }, reason)
      if (r) await releaseHold(ctx, tx, work, r, staff(staffId))
      return r
    }),
  )

export const payoutFailed = (ctx: CashierCtx, brandId: number, staffId: number, id: number, reason: string) =>
  act(ctx, brandId, id, 'fail its payout', (row, now) =>
    ctx.uow.run(async (tx, work) => {
      const r = await move(tx, row, 'payout_failed', staff(staffId), now, { reason }, reason)
      if (r) await releaseHold(ctx, tx, work, r, staff(staffId))
      return r
    }),
  )

export const markPaid = (ctx: CashierCtx, brandId: number, staffId: number, id: number, note: string) =>
  act(ctx, brandId, id, 'mark it paid', (row, now) =>
    ctx.uow.run(async (tx, work) => {
      const r = await move(tx, row, 'paid', staff(staffId), now, {}, note || 'paid')
      if (r) work.emit(WithdrawalPaid, r.brandId, money(r))
      return r
    }),
  )

export async function setOverride(
  ctx: CashierCtx,
  brandId: number,
  customerId: number,
  method: string,
  enabled: boolean | null,
) {
  const customer = await ctx.accounts.read.customer(customerId)
  if (!customer || customer.brandId !== brandId)
    throw new ApiError(404, 'CUSTOMER_NOT_FOUND', 'customer not found')
  const where = and(
    eq(cashierOverrides.brandId, brandId),
    eq(cashierOverrides.customerId, customerId),
    eq(cashierOverrides.method, method),
  )
  if (enabled === null) await ctx.db.delete(cashierOverrides).where(where)
  else
    await ctx.db
      .insert(cashierOverrides)
      .values({ brandId, customerId, method, enabled: enabled ? 1 : 0, updatedAt: ctx.clock.now() })
      .onConflictDoUpdate({
        target: [cashierOverrides.brandId, cashierOverrides.customerId, cashierOverrides.method],
        set: { enabled: enabled ? 1 : 0, updatedAt: ctx.clock.now() },
      })
  const rows = await ctx.db
    .select({ method: cashierOverrides.method, enabled: cashierOverrides.enabled })
    .from(cashierOverrides)
    .where(and(eq(cashierOverrides.brandId, brandId), eq(cashierOverrides.customerId, customerId)))
  return {
    customer_id: customerId,
    overrides: rows.map((r) => ({ method: r.method, enabled: r.enabled === 1 })),
  }
}

export async function saveMethod(
  ctx: CashierCtx,
  brandId: number,
  code: string,
  m: {
    provider: string
    title: string
    deposit: boolean
    withdrawal: boolean
    currencies: string[]
    countries?: string[]
    min_amount: number
    max_amount: number
    fee_percent?: number
    fee_fixed_minor?: number
    enabled: boolean
  },
) {
  if (!ctx.providers.has(m.provider))
    throw new ApiError(400, 'INVALID_DATA', `provider: one of ${[...ctx.providers.keys()].join(', ')}`)
  if (m.min_amount > m.max_amount) throw new ApiError(400, 'INVALID_DATA', 'min_amount: above max_amount')
  const values = {
    provider: m.provider,
    title: m.title,
    deposit: m.deposit ? 1 : 0,
    withdrawal: m.withdrawal ? 1 : 0,
    currencies: JSON.stringify(m.currencies),
    countries: JSON.stringify(m.countries ?? []),
    minAmount: m.min_amount,
    maxAmount: m.max_amount,
    feeBps: Math.round((m.fee_percent ?? 0) * 100),
    feeFixedMinor: m.fee_fixed_minor ?? 0,
    enabled: m.enabled ? 1 : 0,
    updatedAt: ctx.clock.now(),
  }
  await ctx.db
    .insert(cashierMethods)
    .values({ brandId, code, ...values })
    .onConflictDoUpdate({ target: [cashierMethods.brandId, cashierMethods.code], set: values })
  return { code, ...m }
}

/** Job: credit_failed deposits are credited again, then after MAX_CREDIT_ATTEMPTS handed to a person. */
export async function retryCredits(ctx: CashierCtx) {
  const rows = await ctx.db
    .select()
    .from(cashierTransactions)
    .where(eq(cashierTransactions.status, STATUS.credit_failed))
    .limit(100)
  for (const row of rows)
    await ctx.uow
      .run(async (tx, work) => {
        const now = ctx.clock.now()
        if (row.creditAttempts >= MAX_CREDIT_ATTEMPTS)
          return move(
            tx,
            row,
            'give_up',
            'system',
            now,
            { reason: 'the payment is being reviewed' },
            'credit retries exhausted',
          )
        return credit(ctx, tx, work, row, 'system', now)
      })
      .catch((e) => ctx.logger.log('warn', 'cashier credit retry', { transaction: row.id, err: String(e) }))
  return rows.length
}

/**
 * Job: asks the provider about deposits still open after a while. A state the provider reached and we
 * did not (a lost webhook) is applied through the inbox like a webhook (`recon:` event ids, so once); a
 * contradiction with what we did (it says failed, we credited) flags the transaction for a person.
 */
export async function reconcile(ctx: CashierCtx, olderThanMs = 120_000) {
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
