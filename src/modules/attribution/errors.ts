import { codeRefusals } from '../../kernel/refusal'

/** What attribution refuses: each code and the status it is answered with (kernel/refusal.ts). */
const ATTRIBUTION = codeRefusals({
  CUSTOMER_NOT_FOUND: 404,
  INSTALL_NOT_FOUND: 404,
})

export const refuse = ATTRIBUTION.refuse
