import { codeRefusals } from '../../kernel/refusal'

/** What notifications refuses: each code and the status it is answered with (kernel/refusal.ts). */
const NOTIFICATIONS = codeRefusals({
  ACCOUNT_NOT_FOUND: 404,
  PERMISSION_DENIED: 401,
})

export const refuse = NOTIFICATIONS.refuse
