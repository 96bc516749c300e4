/**
 * The values of a notification (spec 2.10 and 6 leave them open):
 * - token: what happened, a dotted event name (below);
 * - type: the family a client groups by;
 * - status: 0 unread, 1 read;
 * - level: how prominently a client shows it.
 */
export const NOTIFICATION_TOKENS = {
  'order.activated': 'trade',
  'order.sl': 'trade',
  'order.tp': 'trade',
  'order.expired': 'trade',
  /** A pending order reached its price and was cancelled: no free margin, or the account disabled or read-only (data.reason). */
  'order.cancelled': 'trade',
  'margin.call': 'margin',
  'margin.stop_out': 'margin',
  'alert.fired': 'alert',
  'staff.message': 'system',
  /** Prop challenges: a loss limit broke (the phase failed), a share of one was used, a phase passed. */
  'prop.breach': 'prop',
  'prop.warning': 'prop',
  'prop.phase_passed': 'prop',
} as const

export type NotificationToken = keyof typeof NOTIFICATION_TOKENS
export const NOTIFICATION_TYPES = ['trade', 'margin', 'alert', 'prop', 'system'] as const
export const NOTIFICATION_LEVELS = ['info', 'warning', 'critical'] as const
export type NotificationLevel = (typeof NOTIFICATION_LEVELS)[number]
export const STATUS = { UNREAD: 0, READ: 1 } as const

/** Field order of the rows of GET /notify/list (spec 2.10). */
export const STRUCTURE = [
  'id',
  'token',
  'message',
  'create_time',
  'open_time',
  'type',
  'status',
  'level',
  'description',
  'data',
] as const

/** Escapes LIKE wildcards so a text filter matches literally. */
export const likePattern = (text: string) => `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`
