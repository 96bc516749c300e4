import { refusals } from '../../kernel/refusal'

/** auth's codes with the status each is answered with. */
const CODES = {
  USER_DISABLED: 402,
  INVALID_DATA: 400,
  UPDATE_PASSWORD_ERROR: 401,
} as const
export type AuthCode = keyof typeof CODES

/**
 * What auth refuses (kernel/refusal.ts): each code its own kind. Services name a code; the HTTP edge
 * answers it with its status.
 */
export const AUTH = refusals(
  Object.fromEntries(Object.entries(CODES).map(([code, status]) => [code, { status, code }])) as {
    [C in keyof typeof CODES]: { status: (typeof CODES)[C]; code: C }
  },
)

export const refuse = AUTH.refuse
