export const SESSION_TYPES = [
  'SESSION_USER',
  'SESSION_CUSTOMER',
  'SESSION_MANAGER',
  'SESSION_ADMIN',
  'SESSION_DEALER',
] as const
export type SessionType = (typeof SESSION_TYPES)[number]

export const STAFF_SESSIONS: SessionType[] = ['SESSION_MANAGER', 'SESSION_ADMIN', 'SESSION_DEALER']
export const ANY_SESSION: SessionType[] = [...SESSION_TYPES]

export const staffRoleSession = {
  MANAGER: 'SESSION_MANAGER',
  ADMIN: 'SESSION_ADMIN',
  DEALER: 'SESSION_DEALER',
} as const satisfies Record<string, SessionType>

/** What a verified access token says about its bearer. */
export interface Session {
  type: SessionType
  brandId: number
  /** Trading login for SESSION_USER; staff login for staff sessions. */
  login?: number
  customerId?: number
  staffId?: number
  /** The principal's session epoch when the token was issued; a disable or password change bumps it. */
  epoch: number
  jti: string
  /** Expiry, epoch seconds. */
  exp: number
  /**
   * The principal's record as the guard read it for this request (an account, customer or staff row),
   * so a route does not read it again. Only on sessions handed to routes, never on the token's memo.
   */
  principal?: unknown
}

/** Finds the record behind a session when it may still act: enabled, of its brand, same session epoch. */
export interface PrincipalDirectory {
  current(session: Session): Promise<unknown | null>
}

export const isStaff = (s: Session) => STAFF_SESSIONS.includes(s.type)
