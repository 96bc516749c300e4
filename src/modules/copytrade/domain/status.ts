/** Subscription status (spec 2.16.1, 3.5). */
export const SUB_STATUS = { ACTIVE: 0, PAUSED: 1, DISABLED: 2 } as const
export const SUB_STATUS_NAMES = ['ACTIVE', 'PAUSED', 'DISABLED'] as const

export type SubAction = 'pause' | 'resume' | 'disable' | 'equity_stop' | 'master_gone'

/**
 * The transitions of spec 3.5 (not shown there; designed here):
 *
 * | from     | pause  | resume | disable  | equity_stop | master_gone |
 * |----------|--------|--------|----------|-------------|-------------|
 * | ACTIVE   | PAUSED | -      | DISABLED | PAUSED      | DISABLED    |
 * | PAUSED   | -      | ACTIVE | DISABLED | PAUSED      | DISABLED    |
 * | DISABLED | -      | -      | -        | -           | -           |
 *
 * DISABLED is final: its links end and a new subscription to the same master may be created. PAUSED
 * copies nothing new, but a close of a master position already copied is still copied (the follower is
 * never left holding a position the master has left), and its equity stop still closes the copies it
 * holds (the status stays PAUSED). A missing cell answers 409 INVALID_TRANSITION.
 */
export function nextStatus(from: number, action: SubAction): number | null {
  switch (action) {
    case 'pause':
      return from === SUB_STATUS.ACTIVE ? SUB_STATUS.PAUSED : null
    case 'equity_stop':
      return from === SUB_STATUS.DISABLED ? null : SUB_STATUS.PAUSED
    case 'resume':
      return from === SUB_STATUS.PAUSED ? SUB_STATUS.ACTIVE : null
    case 'disable':
    case 'master_gone':
      return from === SUB_STATUS.DISABLED ? null : SUB_STATUS.DISABLED
  }
}
