import { refusals } from '../../kernel/refusal'

/** accounts's codes with the status each is answered with. */
const CODES = {
  ACCOUNT_NOT_FOUND: 404,
  CHANGE_PASSWORD_DISABLED: 403,
  INCORRECT_PASSWORD: 403,
  INVALID_DATA: 400,
  GROUP_NOT_FOUND: 404,
  GROUP_EXISTS: 409,
  INVALID_MARGIN_LEVEL: 400,
  CUSTOMER_NOT_FOUND: 404,
  NOT_ENOUGH_FUNDS: 400,
  ACCOUNT_MODE_MISMATCH: 409,
} as const
export type AccountsCode = keyof typeof CODES

/**
 * What accounts refuses (kernel/refusal.ts): each code its own kind. Services name a code; the HTTP edge
 * answers it with its status.
 */
export const ACCOUNTS = refusals(
  Object.fromEntries(Object.entries(CODES).map(([code, status]) => [code, { status, code }])) as {
    [C in keyof typeof CODES]: { status: (typeof CODES)[C]; code: C }
  },
)

export const refuse = ACCOUNTS.refuse
