import { codeRefusals } from '../../kernel/refusal'

/** What kyc refuses: each code and the status it is answered with (kernel/refusal.ts). */
const KYC = codeRefusals({
  KYC_DOCUMENTS_MISSING: 400,
  KYC_STEP_NOT_FOUND: 404,
  KYC_PROFILE_NOT_FOUND: 404,
  KYC_STATE_CONFLICT: 409,
  KYC_DOCUMENT_NOT_FOUND: 404,
  FILE_NOT_FOUND: 404,
})

export const refuse = KYC.refuse
