import { codeRefusals, refusals } from '../../kernel/refusal'

/** What cashier refuses: each code and the status it is answered with (kernel/refusal.ts). */
const CASHIER = codeRefusals({
  TRANSACTION_NOT_FOUND: 404,
  TRANSACTION_STATE_CONFLICT: 409,
  /** A withdrawal's payout is being sent (its approval waits on the provider): staff wait for its answer. */
  PAYOUT_BEING_SENT: 409,
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
  ACCOUNT_MANAGED: 403,
  ACCOUNT_DISABLED: 403,
  AMOUNT_OUT_OF_RANGE: 400,
  METHOD_NOT_AVAILABLE: 400,
})

export const refuse = CASHIER.refuse

/**
 * What changed since a withdrawal was asked, found when staff approve it: a state conflict (409), under
 * the code the request would have been refused with then, or its payout provider taken out of the
 * configuration (503). The withdrawal stays pending.
 */
const SINCE_ASKED = refusals({
  ACCOUNT_DISABLED: { status: 409, code: 'ACCOUNT_DISABLED' },
  WITHDRAWAL_NOT_ALLOWED: { status: 409, code: 'WITHDRAWAL_NOT_ALLOWED' },
  /** The withdrawal's payout provider is no longer configured on this instance: nothing was sent. */
  PROVIDER_NOT_CONFIGURED: { status: 503, code: 'PROVIDER_NOT_CONFIGURED' },
})

export const refuseSinceAsked = SINCE_ASKED.refuse
