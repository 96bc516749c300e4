import { refusals } from '../../kernel/refusal'

/** uploads's codes with the status each is answered with. */
const CODES = {
  PAYLOAD_TOO_LARGE: 413,
  FILE_NOT_FOUND: 404,
} as const
export type UploadsCode = keyof typeof CODES

/**
 * What uploads refuses (kernel/refusal.ts): each code its own kind. Services name a code; the HTTP edge
 * answers it with its status.
 */
export const UPLOADS = refusals(
  Object.fromEntries(Object.entries(CODES).map(([code, status]) => [code, { status, code }])) as {
    [C in keyof typeof CODES]: { status: (typeof CODES)[C]; code: C }
  },
)

export const refuse = UPLOADS.refuse
