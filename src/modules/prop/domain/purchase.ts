/** Purchase status (spec 3.2). */
export const PURCHASE = {
  pending: 0,
  paid: 1,
  account_created: 2,
  active: 3,
  failed: 4,
  refunded: 5,
} as const
export const PURCHASE_NAMES = ['pending', 'paid', 'account_created', 'active', 'failed', 'refunded'] as const

/** Challenge status (spec 3.3). */
export const CHALLENGE = { pending: 0, active: 1, passed: 2, failed: 3, cancelled: 4 } as const
export const CHALLENGE_NAMES = ['pending', 'active', 'passed', 'failed', 'cancelled'] as const

/** Phase status (spec 3.4: 1 is active; the rest is this design). */
export const PHASE = { pending: 0, active: 1, passed: 2, failed: 3, cancelled: 4 } as const
export const PHASE_NAMES = CHALLENGE_NAMES

/**
 * The steps of a purchase, in order, and the code a failure at each answers (4.19). What a failure gives
 * back is each done step's compensation (purchase-rollback.ts STEPS: the fee before the account, the
 * initial balance before the challenge), read from the purchase's records.
 */
export type FailedStep = 'payment' | 'account' | 'initial_balance' | 'challenge'

export const FAILURES: Record<FailedStep, { code: string }> = {
  payment: { code: 'PAYMENT_FAILED' },
  account: { code: 'ACCOUNT_CREATION_FAILED' },
  initial_balance: { code: 'INITIAL_BALANCE_FAILED' },
  challenge: { code: 'CHALLENGE_CREATION_FAILED' },
}

/**
 * The final state of a failed purchase (3.2 leaves it open): `refunded` when the fee was taken and given
 * back, `failed` when nothing was taken or a rollback itself failed (staff must look: `can_cancel`).
 * The customer may try again (`can_retry`) unless a rollback is outstanding.
 */
export function failedOutcome(step: FailedStep, feeTaken: boolean, rollbackFailed: boolean) {
  if (rollbackFailed)
    return {
      status: PURCHASE.failed,
      payment_status: 'rollback_failed',
      activation_status: 'failed',
      next_action: 'CONTACT_SUPPORT',
      can_retry: false,
      can_cancel: true,
    }
  return {
    status: feeTaken ? PURCHASE.refunded : PURCHASE.failed,
    payment_status: feeTaken ? 'refunded' : step === 'payment' ? 'failed' : 'not_required',
    activation_status: 'failed',
    next_action: 'RETRY_PURCHASE',
    can_retry: true,
    can_cancel: false,
  }
}
