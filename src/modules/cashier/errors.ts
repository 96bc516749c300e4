import { refusals } from '../../kernel/refusal'

/** cashier's codes with the status each is answered with. */
const CODES = {
  TRANSACTION_NOT_FOUND: 404,
  TRANSACTION_STATE_CONFLICT: 409,
  PAYMENT_NOT_FOUND: 404,
  PAYMENT_STATE_CONFLICT: 409,
  PROVIDER_NOT_FOUND: 404,
  INVALID_SIGNATURE: 401,
  INVALID_DATA: 400,
  WITHDRAWAL_NOT_ALLOWED: 403,
  KYC_REQUIRED: 403,
  NOT_ENOUGH_FREE_MARGIN: 400,
  DEPOSIT_NOT_ALLOWED: 403,
  KYC_LIMIT_EXCEEDED: 403,
  PROVIDER_UNAVAILABLE: 502,
  CUSTOMER_NOT_FOUND: 404,
  ACCOUNT_NOT_REAL: 400,
  AMOUNT_OUT_OF_RANGE: 400,
  METHOD_NOT_AVAILABLE: 400,
} as const
export type CashierCode = keyof typeof CODES

/**
 * What cashier refuses (kernel/refusal.ts): each code its own kind. Services name a code; the HTTP edge
 * answers it with its status.
 */
export const CASHIER = refusals(
  Object.fromEntries(Object.entries(CODES).map(([code, status]) => [code, { status, code }])) as {
    [C in keyof typeof CODES]: { status: (typeof CODES)[C]; code: C }
  },
)

export const refuse = CASHIER.refuse
