/**
 * The customer's cashier, one use case a file (issue 42): the methods an account may use, a deposit, a
 * withdrawal, the customer's transactions; what they share (methods, limits, idempotency keys, the
 * created row) is in shared.ts.
 */
export { cancelTransaction } from './cancel-deposit'
export { cancelWithdrawal } from './cancel-withdrawal'
export { listMethods } from './list-methods'
export { customerTransaction, customerTransactions } from './list-transactions'
export { requestWithdrawal } from './request-withdrawal'
export { startDeposit } from './start-deposit'
