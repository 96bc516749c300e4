import { codeRefusals } from '../../kernel/refusal'

/** What scripts refuses: each code and the status it is answered with (kernel/refusal.ts). */
const SCRIPTS = codeRefusals({
  INVALID_ADD_SCRIPT: 500,
  INVALID_UPDATE_SCRIPT: 500,
  SCRIPT_NOT_FOUND: 404,
})

export const refuse = SCRIPTS.refuse
