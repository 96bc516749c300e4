import { refusals } from '../../kernel/refusal'

/** attribution's codes with the status each is answered with. */
const CODES = {
  CUSTOMER_NOT_FOUND: 404,
  INSTALL_NOT_FOUND: 404,
} as const
export type AttributionCode = keyof typeof CODES

/**
 * What attribution refuses (kernel/refusal.ts): each code its own kind. Services name a code; the HTTP edge
 * answers it with its status.
 */
export const ATTRIBUTION = refusals(
  Object.fromEntries(Object.entries(CODES).map(([code, status]) => [code, { status, code }])) as {
    [C in keyof typeof CODES]: { status: (typeof CODES)[C]; code: C }
  },
)

export const refuse = ATTRIBUTION.refuse
