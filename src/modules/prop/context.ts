import type { Kernel } from '../../kernel/kernel'
import type { AccountsApi } from '../accounts'
import type { propChallenges, propPhases } from './schema'

/** What the prop services work with. */
export interface PropCtx extends Kernel {
  accounts: AccountsApi
  /** The steps of a purchase (steps.ts); a test replaces one to make it fail. */
  steps: PurchaseSteps
}

/** The finance operations' common api_data (4.14). */
export interface PropApiData {
  module: 'prop'
  operation: string
  program_id: number
  purchase_id: number
  customer_id: number
  payer_login: number
  challenge_login: number | null
  idempotency_key: string | null
}

export interface OpenedAccount {
  login: number
  group: string
  currency: string
  leverage: number
  enable: number
  customer_id: number
}

/**
 * The steps of a purchase, each its own commit, behind one object so that a test can make any of them
 * fail (4.19) and see exactly the rollbacks it requests. Each finance operation has an idempotency key of
 * its purchase, so a retried step never books twice.
 */
/** Amounts are integer minor units of the account currency. */
export interface PurchaseSteps {
  takeFee(brandId: number, login: number, amountMinor: number, data: PropApiData): Promise<number>
  openAccount(brandId: number, customerId: number, group: string, password: string): Promise<OpenedAccount>
  initialBalance(brandId: number, login: number, amountMinor: number, data: PropApiData): Promise<number>
  createChallenge(
    challenge: typeof propChallenges.$inferInsert,
    phase: Omit<typeof propPhases.$inferInsert, 'challengeId'>,
  ): Promise<number>
  refundFee(brandId: number, login: number, amountMinor: number, data: PropApiData): Promise<number>
  reverseInitialBalance(
    brandId: number,
    login: number,
    amountMinor: number,
    data: PropApiData,
  ): Promise<number>
}
