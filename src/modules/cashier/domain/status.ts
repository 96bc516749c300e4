/** Cashier transaction statuses (spec 3.1). */
export const STATUS = {
  created: 0,
  pending_payment: 1,
  provider_confirmed: 2,
  credited: 3,
  credit_failed: 4,
  failed: 5,
  cancelled: 6,
  refunded: 7,
  chargeback: 8,
  manual_review: 9,
} as const
export type StatusName = keyof typeof STATUS
type Status = (typeof STATUS)[StatusName]
export const STATUS_NAMES = Object.keys(STATUS) as StatusName[]
export const statusName = (s: number): StatusName => STATUS_NAMES[s] ?? 'created'

/**
 * What a withdrawal's statuses mean, named for a customer: the numbers are spec 3.1's, but a paid
 * withdrawal is not "credited" (issue 27). Deposits keep the spec's names.
 */
const WITHDRAWAL_NAMES = {
  [STATUS.pending_payment]: 'pending_approval',
  [STATUS.provider_confirmed]: 'payout_in_progress',
  [STATUS.credited]: 'paid',
  [STATUS.failed]: 'payout_failed',
} as const
export type WithdrawalName = (typeof WITHDRAWAL_NAMES)[keyof typeof WITHDRAWAL_NAMES]
export const TX_STATUS_NAMES = [...STATUS_NAMES, ...Object.values(WITHDRAWAL_NAMES)] as (
  | StatusName
  | WithdrawalName
)[]

const WITHDRAWAL_STATUS = Object.fromEntries(
  Object.entries(WITHDRAWAL_NAMES).map(([n, name]) => [name, Number(n)]),
) as Record<WithdrawalName, number>

/**
 * A `status` query as the rows it names: a status of either kind by its spec name, or a withdrawal's by
 * the name the API shows for it (`pending_approval`, `paid`, …).
 */
export function statusFilter(name: StatusName | WithdrawalName): { status: number; kind?: 'withdrawal' } {
  if (name in WITHDRAWAL_STATUS)
    return { status: WITHDRAWAL_STATUS[name as WithdrawalName], kind: 'withdrawal' }
  return { status: STATUS[name as StatusName] }
}

export const txStatusName = (kind: 'deposit' | 'withdrawal', s: number): StatusName | WithdrawalName =>
  (kind === 'withdrawal' ? WITHDRAWAL_NAMES[s as keyof typeof WITHDRAWAL_NAMES] : undefined) ?? statusName(s)

/** What a provider says about a payment (a module's parsed webhook, or its status API). */
export type ProviderUpdate = 'pending' | 'confirmed' | 'failed' | 'cancelled' | 'refunded' | 'chargeback'

/** What the server or staff do. */
export type Action =
  | ProviderUpdate
  | 'route' // handed to the provider
  | 'mismatch' // the provider confirmed another amount or currency
  | 'credit' // the ledger credit succeeded
  | 'credit_error' // the ledger credit failed
  | 'give_up' // credit retries exhausted
  | 'resolve_credit' // staff: credit a reviewed transaction
  | 'resolve_fail' // staff: close a reviewed transaction as failed
  | 'refund' // staff: refund a credited deposit
  | 'reversal' // the provider took a deposit's money back (refund, chargeback) before it was credited
  | 'expire' // a deposit's payment session ended unpaid past its age (the job)
  // withdrawals
  | 'approve' // staff approved, payout sent
  | 'reject' // staff rejected, hold returned
  | 'cancel' // the customer took it back (a withdrawal before staff decided, hold returned; a deposit not paid)
  | 'paid' // payout settled
  | 'payout_failed' // payout failed, hold returned
  | 'payout_unknown' // sending the payout failed with no answer: it may have been sent (hold kept)

type Table = Partial<Record<Status, Partial<Record<Action, Status>>>>
const S = STATUS

/**
 * Deposits: created -> pending_payment -> provider_confirmed -> credited; provider_confirmed ->
 * credit_failed -> credited (retry) or manual_review; failed and cancelled end a payment (the customer
 * cancels one not paid, a session unpaid past its age expires); credited -> refunded or chargeback.
 * Anything not listed is ignored, so an event arriving late or twice never moves a transaction
 * backwards. A confirmation after a failure or cancellation means money moved where we thought none did,
 * and a reversal before the credit (out of order, or of a deposit not credited yet) means money left
 * before it was ours: a person looks at it (manual_review, which then credits only what is left).
 */
const DEPOSIT: Table = {
  [S.created]: {
    route: S.pending_payment,
    pending: S.pending_payment,
    confirmed: S.provider_confirmed,
    failed: S.failed,
    cancelled: S.cancelled,
    mismatch: S.manual_review,
    reversal: S.manual_review,
  },
  [S.pending_payment]: {
    confirmed: S.provider_confirmed,
    failed: S.failed,
    cancelled: S.cancelled,
    cancel: S.cancelled,
    expire: S.cancelled,
    mismatch: S.manual_review,
    reversal: S.manual_review,
  },
  [S.provider_confirmed]: { credit: S.credited, credit_error: S.credit_failed, reversal: S.manual_review },
  [S.credit_failed]: { credit: S.credited, give_up: S.manual_review, reversal: S.manual_review },
  [S.credited]: { refunded: S.refunded, refund: S.refunded, chargeback: S.chargeback },
  [S.manual_review]: { resolve_credit: S.credited, resolve_fail: S.failed },
  [S.failed]: { confirmed: S.manual_review, mismatch: S.manual_review, reversal: S.manual_review },
  [S.cancelled]: { confirmed: S.manual_review, mismatch: S.manual_review, reversal: S.manual_review },
}

/**
 * Withdrawals (funds held by a balance-out when requested): pending_payment waits for staff; approve
 * sends the payout (provider_confirmed: "approved, payout under way"); paid settles it (credited means
 * "settled with the customer" for a withdrawal); reject, the customer's cancel (before staff decide) and a
 * failed payout return the hold. A payout whose sending ended with no answer (a timeout: the provider may
 * have sent it) keeps the hold in manual_review, where staff record what the provider did (paid, or
 * payout_failed).
 */
const WITHDRAWAL: Table = {
  [S.created]: { route: S.pending_payment },
  [S.pending_payment]: { approve: S.provider_confirmed, reject: S.cancelled, cancel: S.cancelled },
  [S.provider_confirmed]: { paid: S.credited, payout_failed: S.failed, payout_unknown: S.manual_review },
  [S.manual_review]: { paid: S.credited, payout_failed: S.failed },
}

type Kind = 'deposit' | 'withdrawal'

/** The status after `action`, or null when the action does not apply (the caller changes nothing). */
export function next(kind: Kind, from: number, action: Action): Status | null {
  return (kind === 'deposit' ? DEPOSIT : WITHDRAWAL)[from as Status]?.[action] ?? null
}

/** Every status `action` may start from (for the conditional UPDATE's WHERE). */
export function sources(kind: Kind, action: Action): Status[] {
  const table = kind === 'deposit' ? DEPOSIT : WITHDRAWAL
  return (Object.keys(table).map(Number) as Status[]).filter((s) => table[s]?.[action] !== undefined)
}

/** The whole table (OpenAPI description and docs). */
export function transitionsText(kind: Kind): string {
  const table = kind === 'deposit' ? DEPOSIT : WITHDRAWAL
  return Object.entries(table)
    .map(
      ([from, moves]) =>
        `${statusName(Number(from))}: ${Object.entries(moves!)
          .map(([a, to]) => `${a} -> ${statusName(to!)}`)
          .join(', ')}`,
    )
    .join('; ')
}

/**
 * Statuses in which a deposit counts toward the KYC limit (money in or on its way); one just `created`
 * counts too (customer/shared.ts: depositedTowardLimit).
 */
export const COUNTING = [
  S.pending_payment,
  S.provider_confirmed,
  S.credited,
  S.credit_failed,
  S.manual_review,
]
/** Statuses reconciliation asks the provider about. */
export const OPEN = [S.created, S.pending_payment, S.provider_confirmed, S.credit_failed]

/**
 * A deposit's `provider_amount` and `provider_currency` after the provider took `reversed` back before
 * the credit: what the provider still holds, i.e. what it confirmed less what it took back (minor units).
 * A reversal before any confirmation leaves it negative, and the currency unset, until the capture
 * arrives (pass the capture as a negative reversal to add it). One in another currency than the one held
 * nets nothing and leaves a currency the review cannot credit (staff book it by hand).
 */
export function heldAfterReversal(
  row: {
    status: number
    amount: number
    currency: string
    providerAmount: number | null
    providerCurrency: string | null
  },
  reversed: { amount: number; currency: string },
): { providerAmount: number; providerCurrency: string | null } {
  // a deposit confirmed before the amount was kept (provider_confirmed, credit_failed) holds its amount
  const confirmed = row.status === S.provider_confirmed || row.status === S.credit_failed
  const currency = row.providerCurrency ?? (confirmed ? row.currency : null)
  const held = row.providerAmount ?? (confirmed ? row.amount : 0)
  if (reversed.currency === (currency ?? row.currency))
    return { providerAmount: held - reversed.amount, providerCurrency: currency }
  // another currency than what it holds: nothing nets; the review cannot credit it (booked by hand)
  return { providerAmount: -reversed.amount, providerCurrency: reversed.currency }
}

/** Fee of an amount (minor units): basis points rounded half up, plus the fixed part; never above it. */
export function feeOf(amountMinor: number, bps: number, fixedMinor: number): number {
  return Math.min(amountMinor, Math.round((amountMinor * bps) / 10_000) + fixedMinor)
}

/**
 * The smallest amount from `fromMinor` to `toMinor` (minor units) the fee leaves something of (the fee
 * below it), or null when the fee takes every one whole. What is left grows with the amount (a basis
 * point fee takes at most half of each added unit), so the first past the fixed fee's share is it.
 */
export function leastPaying(
  fromMinor: number,
  toMinor: number,
  bps: number,
  fixedMinor: number,
): number | null {
  if (bps >= 10_000) return null
  let a = Math.max(1, fromMinor, Math.floor((fixedMinor * 10_000) / (10_000 - bps)) - 2)
  while (a <= toMinor && a - feeOf(a, bps, fixedMinor) <= 0) a++
  return a <= toMinor ? a : null
}
