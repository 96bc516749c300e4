/**
 * The cashier's back office, one use case a file (issue 42): staff search and decisions on deposits and
 * withdrawals, method settings and per-customer overrides, and the jobs that retry credits and reconcile
 * with providers; what they share (a staff action on one transaction) is in shared.ts.
 */
export { approveWithdrawal } from './approve-withdrawal'
export { confirmWire } from './confirm-wire'
export { endUnpaidSession, expireSessions, PAYMENT_SESSION_TTL_MS } from './expire-sessions'
export { markPaid } from './mark-paid'
export { payoutFailed } from './payout-failed'
export { reconcile } from './reconcile'
export { refund } from './refund'
export { rejectWithdrawal } from './reject-withdrawal'
export { resolveReview } from './resolve-review'
export { retryCredit } from './retry-credit'
export { retryCredits } from './retry-credits'
export { saveMethod } from './save-method'
export { searchTransactions, staffTransaction } from './search'
export { setOverride } from './set-override'
