import { codeRefusals } from '../../kernel/refusal'

/** Prop's codes with the status each is answered with (spec 7.4 and this module's). */
const CODES = {
  PROGRAM_NOT_FOUND: 404,
  PROGRAM_DISABLED: 400,
  PROGRAM_NAME_TAKEN: 409,
  INVALID_DEMO_GROUP: 400,
  DEMO_GROUP_REQUIRED: 400,
  INVALID_PAYER_ACCOUNT: 403,
  PAYER_ACCOUNT_NOT_REAL: 400,
  CURRENCY_CONVERSION_REQUIRED: 400,
  NOT_ENOUGH_FUNDS: 400,
  PURCHASE_LIMIT_PER_CUSTOMER: 400,
  PURCHASE_LIMIT_PER_PERIOD: 400,
  PURCHASE_LIMIT_ACTIVE: 400,
  PAYMENT_FAILED: 402,
  ACCOUNT_CREATION_FAILED: 500,
  INITIAL_BALANCE_FAILED: 500,
  CHALLENGE_CREATION_FAILED: 500,
  CHALLENGE_NOT_FOUND: 404,
  NOT_FUNDED: 409,
  NO_PROFIT: 409,
  PAYOUT_IN_PROGRESS: 409,
} as const
export type PropCode = keyof typeof CODES

/**
 * What prop refuses (kernel/refusal.ts): each code its own kind. Services and pure checks name a code;
 * the HTTP edge answers it with its status, and the routes document their refusals from this table.
 */
export const PROP = codeRefusals(CODES)

export const refuse = PROP.refuse
