import { codeRefusals } from '../../kernel/refusal'

/** What accounts refuses: each code and the status it is answered with (kernel/refusal.ts). */
const ACCOUNTS = codeRefusals({
  ACCOUNT_NOT_FOUND: 404,
  CHANGE_PASSWORD_DISABLED: 403,
  INCORRECT_PASSWORD: 403,
  PASSWORD_CHANGED: 409,
  INVALID_DATA: 400,
  GROUP_NOT_FOUND: 404,
  GROUP_EXISTS: 409,
  GROUP_IN_USE: 409,
  INVALID_MARGIN_LEVEL: 400,
  CUSTOMER_NOT_FOUND: 404,
  NOT_ENOUGH_FUNDS: 400,
  NOT_ENOUGH_FREE_MARGIN: 400,
  ACCOUNT_MODE_MISMATCH: 409,
  CURRENCY_MISMATCH: 409,
  GROUP_LACKS_SYMBOLS: 409,
  ACCOUNT_MANAGED: 403,
})

export const refuse = ACCOUNTS.refuse
