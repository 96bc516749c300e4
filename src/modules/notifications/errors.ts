import { refusals } from '../../kernel/refusal'

/** notifications's codes with the status each is answered with. */
const CODES = {
  ACCOUNT_NOT_FOUND: 404,
  PERMISSION_DENIED: 401,
} as const
export type NotificationsCode = keyof typeof CODES

/**
 * What notifications refuses (kernel/refusal.ts): each code its own kind. Services name a code; the HTTP edge
 * answers it with its status.
 */
export const NOTIFICATIONS = refusals(
  Object.fromEntries(Object.entries(CODES).map(([code, status]) => [code, { status, code }])) as {
    [C in keyof typeof CODES]: { status: (typeof CODES)[C]; code: C }
  },
)

export const refuse = NOTIFICATIONS.refuse
