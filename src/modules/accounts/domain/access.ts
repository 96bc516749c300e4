import type { Session } from '../../../kernel/auth/session'
import { isStaff } from '../../../kernel/auth/session'

/** How an account read is scoped for a session: the login to read and the owner predicate to enforce. */
type AccountScope =
  | { kind: 'login'; login: number; customerId?: number }
  | { kind: 'only-account-of-customer'; customerId: number }
  | { kind: 'invalid'; message: string }
  | { kind: 'hidden' }

/**
 * Who may read what (pure): a user session its own login; a customer session the accounts it owns
 * (`login` picks one); staff any account of their brand (brand is enforced by every query).
 */
export function accountScope(session: Session, login: number | undefined): AccountScope {
  if (session.type === 'SESSION_USER') {
    if (login !== undefined && login !== session.login) return { kind: 'hidden' }
    return { kind: 'login', login: session.login! }
  }
  if (session.type === 'SESSION_CUSTOMER') {
    if (login === undefined) return { kind: 'only-account-of-customer', customerId: session.customerId! }
    return { kind: 'login', login, customerId: session.customerId! }
  }
  if (isStaff(session)) {
    if (login === undefined) return { kind: 'invalid', message: 'login: required for staff sessions' }
    return { kind: 'login', login }
  }
  return { kind: 'hidden' }
}
