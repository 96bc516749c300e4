import { refusals } from '../../kernel/refusal'

/** affiliate's codes with the status each is answered with. */
const CODES = {
  NOT_FOUND: 404,
  INVALID_CREDENTIALS: 401,
  BRAND_ACCESS_REVOKED: 409,
  TOKEN_NOT_FOUND: 404,
  RATE_LIMITED: 429,
  INVALID_DATA: 400,
  POSTBACK_HOST_NOT_ALLOWED: 400,
  HOST_TAKEN: 409,
  AFFILIATE_NOT_ACTIVE: 409,
  LINK_EXISTS: 409,
  LINK_NOT_FOUND: 404,
  AFFILIATE_NOT_FOUND: 404,
  NOT_HOME_BRAND: 403,
  AFFILIATE_EXISTS: 409,
  CONVERSION_NOT_FOUND: 404,
  KEY_NOT_FOUND: 404,
} as const
export type AffiliateCode = keyof typeof CODES

/**
 * What affiliate refuses (kernel/refusal.ts): each code its own kind. Services name a code; the HTTP edge
 * answers it with its status.
 */
export const AFFILIATE = refusals(
  Object.fromEntries(Object.entries(CODES).map(([code, status]) => [code, { status, code }])) as {
    [C in keyof typeof CODES]: { status: (typeof CODES)[C]; code: C }
  },
)

export const refuse = AFFILIATE.refuse
