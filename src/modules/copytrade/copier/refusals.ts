/** A refusal of trading's write port as a stable skip reason (README: skip reasons). */
export function refusalReason(code: string, message: string) {
  if (code === 'PRICE_STALE') return 'PRICE_STALE'
  if (code === 'PARENT_CLOSED') return 'MASTER_CLOSED'
  if (code === 'NO_LONGER_WANTED') return 'SUBSCRIPTION_NOT_ACTIVE'
  const m = message.toLowerCase()
  if (m.includes('not enough money')) return 'NOT_ENOUGH_MARGIN'
  // the follower account's own limit (a prop phase's max_positions), not the subscription's
  if (m.includes('positions and pending orders together')) return 'ACCOUNT_MAX_POSITIONS'
  if (m.includes('market closed')) return 'MARKET_CLOSED'
  if (m.includes('read-only') || m.includes('disabled')) return 'ACCOUNT_DISABLED'
  if (
    m.includes('not available') ||
    m.includes('not tradable') ||
    m.includes('close-only') ||
    m.includes('long only')
  )
    return 'SYMBOL_NOT_ALLOWED'
  if (m.startsWith('volume')) return 'VOLUME_LIMITS'
  if (code === 'INCORRECT_SL_TP' || m.includes('stop')) return 'INVALID_STOPS'
  return 'TRADE_REFUSED'
}
