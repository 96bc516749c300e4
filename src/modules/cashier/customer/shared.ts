import { and, eq, gt, inArray, or, sql } from 'drizzle-orm'
import type { Session } from '../../../kernel/auth/session'
import type { Brand } from '../../../kernel/brand/registry'
import type { Queryable, Tx } from '../../../kernel/db/client'
import { invalid } from '../../../kernel/http/errors'
import { assertSameRequest, fingerprint } from '../../../kernel/http/idempotency'
import { type AccountView, type CustomerRecord, fromMinor, roundToMinor, toMinor } from '../../accounts'
import { type CashierCtx, providerReady } from '../context'
import { eligibleMethods, type MethodConfig } from '../domain/methods'
import { COUNTING, feeOf, leastPaying, STATUS } from '../domain/status'
import { refuse } from '../errors'
import { cashierMethods, cashierOverrides, cashierTransactions } from '../schema'
import { record, txNotFound, viewOf } from '../transactions'

/** Who asks: the brand and the customer's session. */
export interface SessionScope {
  brand: Brand
  session: Session
}

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

async function brandMethods(ctx: CashierCtx, brandId: number) {
  const rows = await ctx.db.select().from(cashierMethods).where(eq(cashierMethods.brandId, brandId))
  return rows.map(methodOf)
}

export async function customerOf(ctx: CashierCtx, session: Session) {
  const c = await ctx.accounts.read.customer(session.customerId!)
  if (!c) throw refuse('CUSTOMER_NOT_FOUND', 'customer not found')
  return c
}

/**
 * The customer's REAL account (a demo account takes no real money), enabled: staff disable an account to
 * stop it (compliance, a dispute), and the customer's own session must not move its money meanwhile.
 */
export async function realAccount(ctx: CashierCtx, brand: Brand, session: Session, login: number) {
  const view = await ctx.accounts.loadAccountView(brand, session, login)
  if (view.group.accountMode !== 'REAL')
    throw refuse('ACCOUNT_NOT_REAL', `account ${login} is a DEMO account: it takes no real money`)
  if (view.account.enable !== 1)
    throw refuse('ACCOUNT_DISABLED', `account ${login} is disabled: no money moves in or out of it`)
  const managed = await ctx.accounts.managedFunds(login)
  if (managed) throw refuse('ACCOUNT_MANAGED', `login: ${managed}`)
  return view
}

export async function available(
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

export const methodView = (m: MethodConfig, currency: string, purposes: string[]) => ({
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

/**
 * The KYC deposit limit of a currency in minor units, as every read takes it (the deposit's check and
 * the methods' `deposit_limit_remaining`): KYC refuses a limit with more decimals than the currency or
 * past MAX_AMOUNT when it is saved; one stored before that is rounded to the currency, never read as 0.
 */
export function depositLimitMinor(limits: Record<string, number>, currency: string) {
  return Math.min(Number.MAX_SAFE_INTEGER, Math.max(0, roundToMinor(limits[currency] ?? 0, currency)))
}

/** How long a deposit may stay `created` (a live one moves on within seconds) and still count. */
const CREATED_COUNTS_MS = 15 * 60_000

/**
 * What counts toward the KYC deposit limit: deposits with money in or on its way, and those just created
 * (deposits asked at once count each other); one a crash left `created` stops counting after a while.
 */
export async function depositedTowardLimit(
  q: Queryable,
  brandId: number,
  customerId: number,
  currency: string,
  now: number,
) {
  const [r] = await q
    .select({ total: sql<number>`coalesce(sum(${cashierTransactions.amount}), 0)` })
    .from(cashierTransactions)
    .where(
      and(
        eq(cashierTransactions.brandId, brandId),
        eq(cashierTransactions.customerId, customerId),
        eq(cashierTransactions.kind, 'deposit'),
        eq(cashierTransactions.currency, currency),
        or(
          inArray(cashierTransactions.status, COUNTING),
          and(
            eq(cashierTransactions.status, STATUS.created),
            gt(cashierTransactions.createdAt, now - CREATED_COUNTS_MS),
          ),
        ),
      ),
    )
  return Number(r?.total ?? 0)
}

/**
 * The amount in minor units: within the method's limits (400 AMOUNT_OUT_OF_RANGE), and more than its fee
 * takes (400 AMOUNT_OUT_OF_RANGE naming the smallest amount that pays out or credits anything): a
 * withdrawal the fee takes whole holds the customer's money for a payout of nothing, a deposit credits
 * nothing for the money paid.
 */
export function amountIn(
  m: MethodConfig,
  amount: number,
  currency: string,
  purpose: 'deposit' | 'withdrawal',
) {
  const minor = toMinor(amount, currency)
  if (minor === null || minor <= 0)
    throw invalid(`amount: a positive amount with the decimals of ${currency}`)
  if (amount < m.minAmount || amount > m.maxAmount)
    throw refuse(
      'AMOUNT_OUT_OF_RANGE',
      `amount: ${m.code} takes ${m.minAmount} to ${m.maxAmount} ${currency}`,
    )
  if (feeOf(minor, m.feeBps, m.feeFixedMinor) < minor) return minor
  const does = purpose === 'deposit' ? 'credits' : 'pays out'
  const least = leastPaying(
    toMinor(m.minAmount, currency) ?? 1,
    toMinor(m.maxAmount, currency) ?? 0,
    m.feeBps,
    m.feeFixedMinor,
  )
  throw refuse(
    'AMOUNT_OUT_OF_RANGE',
    least === null
      ? `amount: ${m.code}'s fee takes any amount it takes whole; it ${does} nothing`
      : `amount: ${m.code}'s fee takes ${amount} ${currency} whole; the smallest amount it ${does} anything of is ${fromMinor(least, currency)} ${currency}`,
  )
}

export async function byKey(
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
  return viewOf(ctx, brandId, row.id)
}

/** What a deposit or withdrawal asks for: the fingerprint stored with its idempotency key. */
export const requestOf = (
  kind: 'deposit' | 'withdrawal',
  input: { login: number; method: string; amount: number },
) => fingerprint({ kind, login: input.login, method: input.method, amount: input.amount })

/** The eligible method of that code for the account (400 METHOD_NOT_AVAILABLE otherwise). */
export async function methodFor(
  ctx: CashierCtx,
  brand: Brand,
  customer: CustomerRecord,
  view: AccountView,
  purpose: 'deposit' | 'withdrawal',
  code: string,
) {
  const m = (await available(ctx, brand, customer, view, purpose)).find((x) => x.code === code)
  if (!m) throw refuse('METHOD_NOT_AVAILABLE', `method: ${code} is not available for this account`)
  return m
}

/** A new transaction in status created, with its first history row. */
export async function insertCreated(
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
      holdNamed: v.kind === 'withdrawal' ? 1 : 0,
      idempotencyKey: input.idempotency_key ?? null,
      requestHash: input.idempotency_key ? requestOf(v.kind, input) : null,
      createdAt: v.now,
      updatedAt: v.now,
    })
    .returning()
  await record(tx, r!.id, null, STATUS.created, 'customer', `${v.kind} requested`, v.now)
  return r!
}

/** The customer's own transaction of this brand (of this kind), by id: 404 TRANSACTION_NOT_FOUND otherwise. */
export async function ownTransaction(
  ctx: CashierCtx,
  { brand, session }: SessionScope,
  id: number,
  kind?: 'deposit' | 'withdrawal',
) {
  const [row] = await ctx.db
    .select()
    .from(cashierTransactions)
    .where(
      and(
        eq(cashierTransactions.id, id),
        eq(cashierTransactions.brandId, brand.id),
        eq(cashierTransactions.customerId, session.customerId!),
        kind ? eq(cashierTransactions.kind, kind) : undefined,
      ),
    )
  if (!row) throw txNotFound()
  return row
}
