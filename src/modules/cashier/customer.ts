import { and, desc, eq, gte, inArray, lt, lte, sql } from 'drizzle-orm'
import type { Session } from '../../kernel/auth/session'
import type { Brand } from '../../kernel/brand/registry'
import type { Tx } from '../../kernel/db/client'
import { isUniqueViolation } from '../../kernel/db/errors'
import { ApiError, invalid } from '../../kernel/http/errors'
import { assertSameRequest, fingerprint } from '../../kernel/http/idempotency'
import { type AccountView, type CustomerRecord, fromMinor, toMinor } from '../accounts'
import { type CashierCtx, providerReady } from './context'
import { eligibleMethods, type MethodConfig } from './domain/methods'
import { COUNTING, feeOf, STATUS, type StatusName } from './domain/status'
import { WithdrawalRequested } from './events'
import type { NextStep } from './providers/port'
import { cashierMethods, cashierOverrides, cashierTransactions } from './schema'
import { money, move, pageOf, record, txNotFound, txView, viewOf } from './transactions'

const methodOf = (r: typeof cashierMethods.$inferSelect): MethodConfig => ({
  code: r.code,
  provider: r.provider,
  title: r.title,
  deposit: r.deposit === 1,
  withdrawal: r.withdrawal === 1,
  currencies: JSON.parse(r.currencies),
  countries: JSON.parse(r.countries),
  minAmount: r.minAmount,
  maxAmount: r.maxAmount,
  feeBps: r.feeBps,
  feeFixedMinor: r.feeFixedMinor,
  enabled: r.enabled === 1,
})

export async function brandMethods(ctx: CashierCtx, brandId: number) {
  const rows = await ctx.db.select().from(cashierMethods).where(eq(cashierMethods.brandId, brandId))
  return rows.map(methodOf)
}

async function customerOf(ctx: CashierCtx, session: Session) {
  const c = await ctx.accounts.read.customer(session.customerId!)
  if (!c) throw new ApiError(404, 'CUSTOMER_NOT_FOUND', 'customer not found')
  return c
}

/** The customer's REAL account (a demo account takes no real money). */
async function realAccount(ctx: CashierCtx, brand: Brand, session: Session, login: number) {
  const view = await ctx.accounts.loadAccountView(brand, session, login)
  if (view.group.accountMode !== 'REAL')
    throw new ApiError(400, 'ACCOUNT_NOT_REAL', `account ${login} is a DEMO account: it takes no real money`)
  return view
}

async function available(
  ctx: CashierCtx,
  brand: Brand,
  customer: { id: number; country: string },
  view: AccountView,
  purpose: 'deposit' | 'withdrawal',
) {
  const overrides = await ctx.db
    .select()
    .from(cashierOverrides)
    .where(and(eq(cashierOverrides.brandId, brand.id), eq(cashierOverrides.customerId, customer.id)))
  return eligibleMethods(await brandMethods(ctx, brand.id), {
    currency: view.group.currency,
    country: customer.country,
    overrides: new Map(overrides.map((o) => [o.method, o.enabled === 1])),
    providerReady: (p) => providerReady(ctx, brand.name, p),
    purpose,
  })
}

const methodView = (m: MethodConfig, currency: string, purposes: string[]) => ({
  code: m.code,
  provider: m.provider,
  title: m.title,
  type: m.provider === 'wire' ? ('bank_wire' as const) : ('card' as const),
  purposes,
  currencies: m.currencies,
  min_amount: m.minAmount,
  max_amount: m.maxAmount,
  fee_percent: m.feeBps / 100,
  fee_fixed: fromMinor(m.feeFixedMinor, currency),
})

/** GET /cashier/methods: deposit_allowed first (a hard gate), then eligibility per purpose. */
export async function listMethods(ctx: CashierCtx, brand: Brand, session: Session, login: number) {
  const customer = await customerOf(ctx, session)
  if (customer.depositAllowed !== 1)
    throw new ApiError(403, 'DEPOSIT_NOT_ALLOWED', 'deposits are closed for this customer')
  const view = await realAccount(ctx, brand, session, login)
  const currency = view.group.currency
  const dep = await available(ctx, brand, customer, view, 'deposit')
  const wd = customer.withdrawalAllowed === 1 ? await available(ctx, brand, customer, view, 'withdrawal') : []
  const codes = [...new Set([...dep, ...wd].map((m) => m.code))]
  const gates = await ctx.kyc.gates(brand.id, customer.id)
  const limit = gates.deposit_limit ? (gates.deposit_limit[currency] ?? 0) : null
  const used = limit === null ? 0 : await depositedTowardLimit(ctx, brand.id, customer.id, currency)
  return {
    login,
    currency,
    kyc_status: gates.status,
    deposit_limit_remaining: limit === null ? null : Math.max(0, limit - fromMinor(used, currency)),
    withdrawal_allowed: customer.withdrawalAllowed === 1 && gates.withdrawal_allowed,
    methods: codes.map((c) => {
      const m = [...dep, ...wd].find((x) => x.code === c)!
      const purposes = [
        dep.some((x) => x.code === c) ? 'deposit' : '',
        wd.some((x) => x.code === c) ? 'withdrawal' : '',
      ]
      return methodView(m, currency, purposes.filter(Boolean))
    }),
  }
}

async function depositedTowardLimit(ctx: CashierCtx, brandId: number, customerId: number, currency: string) {
  const [r] = await ctx.db
    .select({ total: sql<number>`coalesce(sum(${cashierTransactions.amount}), 0)` })
    .from(cashierTransactions)
    .where(
      and(
        eq(cashierTransactions.brandId, brandId),
        eq(cashierTransactions.customerId, customerId),
        eq(cashierTransactions.kind, 'deposit'),
        eq(cashierTransactions.currency, currency),
        inArray(cashierTransactions.status, COUNTING),
      ),
    )
  return Number(r?.total ?? 0)
}

function amountIn(m: MethodConfig, amount: number, currency: string) {
  const minor = toMinor(amount, currency)
  if (minor === null || minor <= 0)
    throw invalid(`amount: a positive amount with the decimals of ${currency}`)
  if (amount < m.minAmount || amount > m.maxAmount)
    throw new ApiError(
      400,
      'AMOUNT_OUT_OF_RANGE',
      `amount: ${m.code} takes ${m.minAmount} to ${m.maxAmount} ${currency}`,
    )
  return minor
}

async function byKey(
  ctx: CashierCtx,
  brandId: number,
  customerId: number,
  key: string | undefined,
  request: string,
) {
  if (!key) return null
  const [row] = await ctx.db
    .select({ id: cashierTransactions.id, requestHash: cashierTransactions.requestHash })
    .from(cashierTransactions)
    .where(
      and(
        eq(cashierTransactions.brandId, brandId),
        eq(cashierTransactions.customerId, customerId),
        eq(cashierTransactions.idempotencyKey, key),
      ),
    )
  if (!row) return null
  assertSameRequest(row.requestHash, request)
  return viewOf(ctx, row.id)
}

/** What a deposit or withdrawal asks for: the fingerprint stored with its idempotency key. */
const requestOf = (
  kind: 'deposit' | 'withdrawal',
  input: { login: number; method: string; amount: number },
) => fingerprint({ kind, login: input.login, method: input.method, amount: input.amount })

/** The eligible method of that code for the account (400 METHOD_NOT_AVAILABLE otherwise). */
async function methodFor(
  ctx: CashierCtx,
  brand: Brand,
  customer: CustomerRecord,
  view: AccountView,
  purpose: 'deposit' | 'withdrawal',
  code: string,
) {
  const m = (await available(ctx, brand, customer, view, purpose)).find((x) => x.code === code)
  if (!m) throw new ApiError(400, 'METHOD_NOT_AVAILABLE', `method: ${code} is not available for this account`)
  return m
}

/** A new transaction in status created, with its first history row. */
async function insertCreated(
  tx: Tx,
  v: {
    brandId: number
    customerId: number
    kind: 'deposit' | 'withdrawal'
    m: MethodConfig
    amount: number
    currency: string
    now: number
  },
  input: { login: number; method: string; amount: number; idempotency_key?: string },
) {
  const [r] = await tx
    .insert(cashierTransactions)
    .values({
      brandId: v.brandId,
      customerId: v.customerId,
      login: input.login,
      kind: v.kind,
      method: v.m.code,
      provider: v.m.provider,
      status: STATUS.created,
      amount: v.amount,
      fee: feeOf(v.amount, v.m.feeBps, v.m.feeFixedMinor),
      currency: v.currency,
      idempotencyKey: input.idempotency_key ?? null,
      requestHash: input.idempotency_key ? requestOf(v.kind, input) : null,
      createdAt: v.now,
      updatedAt: v.now,
    })
    .returning()
  await record(tx, r!.id, null, STATUS.created, 'customer', `${v.kind} requested`, v.now)
  return r!
}

/**
 * POST /cashier/deposit: the gates (deposit_allowed, a REAL account of the customer, an eligible
 * method, its limits, the KYC limit), then the local transaction (created), then the provider
 * (pending_payment) and what the client does next.
 */
export async function startDeposit(
  ctx: CashierCtx,
  brand: Brand,
  session: Session,
  input: { login: number; method: string; amount: number; return_url?: string; idempotency_key?: string },
  origin: string,
) {
  const customer = await customerOf(ctx, session)
  if (customer.depositAllowed !== 1)
    throw new ApiError(403, 'DEPOSIT_NOT_ALLOWED', 'deposits are closed for this customer')
  const request = requestOf('deposit', input)
  const prior = await byKey(ctx, brand.id, customer.id, input.idempotency_key, request)
  if (prior) return { transaction: prior, next: null, idempotent: true }
  const view = await realAccount(ctx, brand, session, input.login)
  const currency = view.group.currency
  const m = await methodFor(ctx, brand, customer, view, 'deposit', input.method)
  const amount = amountIn(m, input.amount, currency)
  const gates = await ctx.kyc.gates(brand.id, customer.id)
  const now = ctx.clock.now()
  let row: typeof cashierTransactions.$inferSelect
  try {
    row = await ctx.db.transaction(async (tx) => {
      if (gates.deposit_limit) {
        const limit = toMinor(gates.deposit_limit[currency] ?? 0, currency) ?? 0
        const used = await depositedTowardLimit(ctx, brand.id, customer.id, currency)
        if (used + amount > limit)
          throw new ApiError(
            403,
            'KYC_LIMIT_EXCEEDED',
            `deposits before verification are limited to ${fromMinor(limit, currency)} ${currency}; ` +
              `${fromMinor(Math.max(0, limit - used), currency)} remain. Complete: ${gates.deposit_unlimited_requires.join(', ')}`,
          )
      }
      return insertCreated(
        tx,
        { brandId: brand.id, customerId: customer.id, kind: 'deposit', m, amount, currency, now },
        input,
      )
    })
  } catch (e) {
    const again = isUniqueViolation(e)
      ? await byKey(ctx, brand.id, customer.id, input.idempotency_key, request)
      : null
    if (again) return { transaction: again, next: null, idempotent: true }
    throw e
  }
  const provider = ctx.providers.get(m.provider)!
  let started: { next: NextStep; providerRef: string | null }
  try {
    started = await provider.startDeposit(
      {
        transactionId: row.id,
        brandId: brand.id,
        amount,
        currency,
        notifyUrl: `${origin}/cashier/webhook/${m.provider}`,
        returnUrl: input.return_url ?? `${origin}/cashier/sandbox/done`,
      },
      '',
    )
  } catch (e) {
    await ctx.db.transaction((tx) =>
      move(tx, row, 'failed', 'system', ctx.clock.now(), { reason: 'the payment provider is unavailable' }),
    )
    ctx.logger.log('error', 'cashier provider start failed', { provider: m.provider, err: String(e) })
    throw new ApiError(502, 'PROVIDER_UNAVAILABLE', 'the payment provider is unavailable; try again later')
  }
  await ctx.db.transaction((tx) =>
    move(tx, row, 'route', `provider:${m.provider}`, ctx.clock.now(), { providerRef: started.providerRef }),
  )
  return { transaction: await viewOf(ctx, row.id), next: started.next, idempotent: false }
}

/**
 * POST /cashier/withdrawal: withdrawal_allowed, KYC, a REAL account, an eligible method and its limits,
 * free margin (equity minus margin) covering the amount; then the request and the hold (a balance-out
 * that refuses to go below zero) in one transaction, waiting for staff.
 */
export async function requestWithdrawal(
  ctx: CashierCtx,
  brand: Brand,
  session: Session,
  input: { login: number; method: string; amount: number; idempotency_key?: string },
) {
  const customer = await customerOf(ctx, session)
  if (customer.withdrawalAllowed !== 1)
    throw new ApiError(403, 'WITHDRAWAL_NOT_ALLOWED', 'withdrawals are closed for this customer')
  const prior = await byKey(ctx, brand.id, customer.id, input.idempotency_key, requestOf('withdrawal', input))
  if (prior) return { transaction: prior, idempotent: true }
  const gates = await ctx.kyc.gates(brand.id, customer.id)
  if (!gates.withdrawal_allowed)
    throw new ApiError(
      403,
      'KYC_REQUIRED',
      `withdrawals need these KYC steps approved: ${gates.withdrawal_requires.join(', ')}`,
    )
  const view = await realAccount(ctx, brand, session, input.login)
  const currency = view.group.currency
  const m = await methodFor(ctx, brand, customer, view, 'withdrawal', input.method)
  const amount = amountIn(m, input.amount, currency)
  const margin = await ctx.accounts.requireMargin(view)
  if (margin.margin_free < input.amount)
    throw new ApiError(
      400,
      'NOT_ENOUGH_FREE_MARGIN',
      `amount: free margin is ${margin.margin_free} ${currency} (equity ${margin.equity} less margin ${margin.margin})`,
    )
  const now = ctx.clock.now()
  const row = await ctx.uow.run(async (tx, work) => {
    const r = await insertCreated(
      tx,
      { brandId: brand.id, customerId: customer.id, kind: 'withdrawal', m, amount, currency, now },
      input,
    )
    await ctx.accounts.postOperationTx(tx, work, {
      brandId: brand.id,
      login: input.login,
      op: 'OP_BALANCE_OUT',
      amountMinor: amount,
      reason: 'TR_REASON_WITHDRAWAL',
      comment: `withdrawal #${r.id} ${m.code} (held)`,
      apiData: { transaction_id: r.id },
      idempotencyKey: `cashier-hold:${r.id}`,
      createdBy: `customer:${customer.id}`,
    })
    const moved = await move(tx, r, 'route', 'system', now, {}, 'funds held; waiting for approval')
    work.emit(WithdrawalRequested, brand.id, money(r))
    return moved!
  })
  return { transaction: await viewOf(ctx, row.id), idempotent: false }
}

/** GET /cashier/transactions: the customer's own, newest first, with filters and a cursor. */
export async function customerTransactions(
  ctx: CashierCtx,
  brand: Brand,
  session: Session,
  q: {
    login?: number
    kind?: 'deposit' | 'withdrawal'
    status?: StatusName
    from?: number
    to?: number
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
        eq(cashierTransactions.brandId, brand.id),
        eq(cashierTransactions.customerId, session.customerId!),
        q.login !== undefined ? eq(cashierTransactions.login, q.login) : undefined,
        q.kind ? eq(cashierTransactions.kind, q.kind) : undefined,
        q.status ? eq(cashierTransactions.status, STATUS[q.status]) : undefined,
        q.from !== undefined ? gte(cashierTransactions.createdAt, q.from * 1000) : undefined,
        q.to !== undefined ? lte(cashierTransactions.createdAt, q.to * 1000 + 999) : undefined,
        q.cursor ? lt(cashierTransactions.id, q.cursor) : undefined,
      ),
    )
    .orderBy(desc(cashierTransactions.id))
    .limit(limit + 1)
  return pageOf(ctx, rows, limit, txView)
}

export async function customerTransaction(ctx: CashierCtx, brand: Brand, session: Session, id: number) {
  const [row] = await ctx.db
    .select({ id: cashierTransactions.id })
    .from(cashierTransactions)
    .where(
      and(
        eq(cashierTransactions.id, id),
        eq(cashierTransactions.brandId, brand.id),
        eq(cashierTransactions.customerId, session.customerId!),
      ),
    )
  if (!row) throw txNotFound()
  return viewOf(ctx, id)
}
