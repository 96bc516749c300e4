import { refusals } from '../../kernel/refusal'

/** scripts's codes with the status each is answered with. */
const CODES = {
  INVALID_ADD_SCRIPT: 500,
  INVALID_UPDATE_SCRIPT: 500,
  SCRIPT_NOT_FOUND: 404,
} as const
export type ScriptsCode = keyof typeof CODES

/**
 * What scripts refuses (kernel/refusal.ts): each code its own kind. Services name a code; the HTTP edge
 * answers it with its status.
 */
export const SCRIPTS = refusals(
  Object.fromEntries(Object.entries(CODES).map(([code, status]) => [code, { status, code }])) as {
    [C in keyof typeof CODES]: { status: (typeof CODES)[C]; code: C }
  },
)

export const refuse = SCRIPTS.refuse
