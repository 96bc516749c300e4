import { refusals } from '../../kernel/refusal'

/** kyc's codes with the status each is answered with. */
const CODES = {
  KYC_DOCUMENTS_MISSING: 400,
  KYC_STEP_NOT_FOUND: 404,
  KYC_PROFILE_NOT_FOUND: 404,
  KYC_STATE_CONFLICT: 409,
  KYC_DOCUMENT_NOT_FOUND: 404,
  FILE_NOT_FOUND: 404,
} as const
export type KycCode = keyof typeof CODES

/**
 * What kyc refuses (kernel/refusal.ts): each code its own kind. Services name a code; the HTTP edge
 * answers it with its status.
 */
export const KYC = refusals(
  Object.fromEntries(Object.entries(CODES).map(([code, status]) => [code, { status, code }])) as {
    [C in keyof typeof CODES]: { status: (typeof CODES)[C]; code: C }
  },
)

export const refuse = KYC.refuse
