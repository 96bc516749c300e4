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

/**
 * Why a principal may call only the routes open to it while confined (the guard's `whileConfined`), e.g.
 * an account that must replace a generated password first: elsewhere it is refused 403 with this code.
 */
export interface Confinement {
  code: string
  message: string
}

/** A confinement a module may put principals of some roles under, as the document lists it. */
export interface ConfinementDeclaration {
  roles: readonly SessionType[]
  code: string
}

/** Finds the record behind a session when it may still act: enabled, of its brand, same session epoch. */
export interface PrincipalDirectory {
  current(session: Session): Promise<unknown | null>
  /** The confinement of the principal `current` found, or null: it may call every route of its role. */
  confinement?(session: Session, principal: unknown): Confinement | null
}

export const isStaff = (s: Session) => STAFF_SESSIONS.includes(s.type)
