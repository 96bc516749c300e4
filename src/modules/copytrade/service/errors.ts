import { codeRefusals } from '../../../kernel/refusal'

/**
 * Spec 7.5's codes with the HTTP status chosen for each (the spec leaves them open), and the codes this
 * module adds. The routes document the same table (route-common.ts `err`, README.md).
 */
const COPY_CODES = {
  INVALID_CUSTOMER_SESSION: 403,
  INVALID_ACCOUNT: 403,
  MASTER_ACCOUNT_MUST_BE_REAL: 400,
  REWARD_POLICY_REQUIRED: 400,
  INVALID_REWARD_POLICY: 400,
  INVALID_PAYOUT_ACCOUNT: 400,
  PERMISSION_DENIED: 403,
  MASTER_NOT_FOUND: 404,
  MASTER_NOT_AVAILABLE: 403,
  TRADE_HISTORY_NOT_PUBLIC: 403,
  FOLLOWERS_NOT_PUBLIC: 403,
  FOLLOWER_NOT_FOUND: 404,
  FOLLOWER_MODE_NOT_ALLOWED: 403,
  // added by this module
  SUBSCRIPTION_NOT_FOUND: 404,
  MASTER_EXISTS: 409,
  FOLLOWER_EXISTS: 409,
  ALREADY_SUBSCRIBED: 409,
  SELF_COPY: 400,
  INVALID_TRANSITION: 409,
  MASTER_BLOCKED: 403,
  MASTER_HAS_FOLLOWERS: 409,
  TERMS_CHANGED: 409,
  /** money moves of the follower account still being applied to its subscriptions (seconds): retry */
  ACCOUNT_SETTLING: 409,
} as const
export type CopyCode = keyof typeof COPY_CODES

/** Copy trading's refusals (kernel/refusal.ts): each code its own kind, answered with its status above. */
const COPY = codeRefusals(COPY_CODES)

export const copyError = (code: CopyCode, message: string) => COPY.refuse(code, message)

/** The error-response table of a route: the codes it may answer, grouped by status. */
export const codesOf = (...codes: CopyCode[]) => COPY.responses(...codes)
