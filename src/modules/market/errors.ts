import { codeRefusals } from '../../kernel/refusal'

/** What market refuses: each code and the status it is answered with (kernel/refusal.ts). */
const MARKET = codeRefusals({
  SYMBOL_NOT_FOUND: 404,
  GROUP_NOT_FOUND: 404,
  SYMBOL_EXISTS: 409,
  OVERRIDE_NOT_FOUND: 404,
  INVALID_ADD_SYMBOL_TO_MARKET_WATCH: 500,
  USER_NOT_FOUND_OR_INCORRECT: 403,
  SYMBOL_NOT_ALLOWED: 403,
  NOT_OPERATOR_BRAND: 403,
  GROUP_LACKS_SYMBOLS: 409,
  CURRENCY_NOT_CONVERTIBLE: 409,
  SYMBOL_IN_USE: 409,
})

export const refuse = MARKET.refuse
