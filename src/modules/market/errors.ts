import { refusals } from '../../kernel/refusal'

/** market's codes with the status each is answered with. */
const CODES = {
  SYMBOL_NOT_FOUND: 404,
  GROUP_NOT_FOUND: 404,
  SYMBOL_EXISTS: 409,
  OVERRIDE_NOT_FOUND: 404,
  INVALID_ADD_SYMBOL_TO_MARKET_WATCH: 500,
  USER_NOT_FOUND_OR_INCORRECT: 403,
  SYMBOL_NOT_ALLOWED: 403,
} as const
export type MarketCode = keyof typeof CODES

/**
 * What market refuses (kernel/refusal.ts): each code its own kind. Services name a code; the HTTP edge
 * answers it with its status.
 */
export const MARKET = refusals(
  Object.fromEntries(Object.entries(CODES).map(([code, status]) => [code, { status, code }])) as {
    [C in keyof typeof CODES]: { status: (typeof CODES)[C]; code: C }
  },
)

export const refuse = MARKET.refuse
