import { codeRefusals } from '../../kernel/refusal'

/** What alerts refuses: each code and the status it is answered with (kernel/refusal.ts). */
const ALERTS = codeRefusals({
  ALERT_LIMIT_REACHED: 400,
  ALERT_NOT_FOUND: 404,
  ACCOUNT_DISABLED: 403,
})

export const refuse = ALERTS.refuse
