import { codeRefusals } from '../../kernel/refusal'

/** What uploads refuses: each code and the status it is answered with (kernel/refusal.ts). */
const UPLOADS = codeRefusals({
  PAYLOAD_TOO_LARGE: 413,
  FILE_NOT_FOUND: 404,
})

export const refuse = UPLOADS.refuse
