import { refusals } from '../../kernel/refusal'

/** alerts's codes with the status each is answered with. */
const CODES = {
  ALERT_LIMIT_REACHED: 400,
  ALERT_NOT_FOUND: 404,
} as const
export type AlertsCode = keyof typeof CODES

/**
 * What alerts refuses (kernel/refusal.ts): each code its own kind. Services name a code; the HTTP edge
 * answers it with its status.
 */
export const ALERTS = refusals(
  Object.fromEntries(Object.entries(CODES).map(([code, status]) => [code, { status, code }])) as {
    [C in keyof typeof CODES]: { status: (typeof CODES)[C]; code: C }
  },
)

export const refuse = ALERTS.refuse
