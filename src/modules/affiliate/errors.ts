import { codeRefusals } from '../../kernel/refusal'

/** What affiliate refuses: each code and the status it is answered with (kernel/refusal.ts). */
const AFFILIATE = codeRefusals({
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
})

export const refuse = AFFILIATE.refuse
