import type { Tx } from '../../kernel/db/client'
import type { Work } from '../../kernel/db/unit-of-work'
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

interface OpenedAccount {
  login: number
  group: string
  currency: string
  leverage: number
  enable: number
  customer_id: number
}

/**
 * What a step writes on its purchase in the step's own transaction (the purchase's move to its next
 * state, conditional on the state it was in: it throws, rolling the step back, when the recovery job took
 * the purchase first). A crash therefore never leaves a step done and unrecorded.
 */
export type RecordStep = (tx: Tx, work: Work, made: number) => Promise<void>

/**
 * The steps of a purchase, each its own commit with its record, behind one object so that a test can make
 * any of them fail (4.19) or stop (a crash) and see exactly the rollbacks it requests. Each finance
 * operation has an idempotency key of its purchase, so a retried step never books twice.
 * Amounts are integer minor units of the account currency.
 */
export interface PurchaseSteps {
  /**
   * `record` gets the fee's ledger row id. The fee may not take the payer's free margin below zero where
   * it is taken (payer-check.ts checks it first, for its answer).
   */
  takeFee(
    brandId: number,
    login: number,
    amountMinor: number,
    data: PropApiData,
    record: RecordStep,
  ): Promise<number>
  /** `record` gets the new account's login (a purchase's; a later phase's account is recorded by its pass) */
  openAccount(
    account: {
      brandId: number
      customerId: number
      group: string
      password: string
      /** The phase's max_positions (0: none): the account holds no more positions and pending orders */
      maxPositions: number
    },
    record?: RecordStep,
  ): Promise<OpenedAccount>
  /** `record` gets the deposit's ledger row id */
  initialBalance(
    brandId: number,
    login: number,
    amountMinor: number,
    data: PropApiData,
    record?: RecordStep,
  ): Promise<number>
  /** the challenge and its first phase; `record` gets the challenge id (the purchase turns active) */
  createChallenge(
    challenge: typeof propChallenges.$inferInsert,
    phase: Omit<typeof propPhases.$inferInsert, 'challengeId'>,
    record: RecordStep,
  ): Promise<number>
  refundFee(brandId: number, login: number, amountMinor: number, data: PropApiData): Promise<number>
  reverseInitialBalance(
    brandId: number,
    login: number,
    amountMinor: number,
    data: PropApiData,
  ): Promise<number>
}
