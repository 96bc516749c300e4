/** Why a trade was closed, as the engine and clients close it. */
export type CloseReason = 'client' | 'sl' | 'tp' | 'stopout' | 'group_close' | 'risk_limit'

/** Every `close_reason` an order can show: '' while active, a CloseReason, a pending order's own ends. */
export const CLOSE_REASONS = [
  '',
  'client',
  'sl',
  'tp',
  'stopout',
  'group_close',
  'risk_limit',
  'expiration',
  'no_money',
  'trade_disabled',
  'invalid',
] as const satisfies readonly (CloseReason | '' | 'expiration' | 'no_money' | 'trade_disabled' | 'invalid')[]
