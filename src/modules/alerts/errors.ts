import { codeRefusals } from '../../kernel/refusal'

/** What alerts refuses: each code and the status it is answered with (kernel/refusal.ts). */
const ALERTS = codeRefusals({
  ALERT_LIMIT_REACHED: 400,
  ALERT_NOT_FOUND: 404,
  ACCOUNT_DISABLED: 403,
  // a login the session may not see, as trading answers it (spec 4.5 lists no 404)
  USER_NOT_FOUND: 403,
  // an edit that lost a race to another write twice
  ALERT_CHANGED: 409,
})

export const refuse = ALERTS.refuse
