import { codeRefusals } from '../../kernel/refusal'

/** What auth refuses: each code and the status it is answered with (kernel/refusal.ts). */
const AUTH = codeRefusals({
  USER_DISABLED: 402,
  INVALID_DATA: 400,
  UPDATE_PASSWORD_ERROR: 401,
})

export const refuse = AUTH.refuse
