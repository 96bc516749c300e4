/** What a new account's market watch shows when its group names no list of its own. */
export const STARTER_WATCH = [
  'EURUSD',
  'GBPUSD',
  'USDJPY',
  'AUDUSD',
  'USDCAD',
  'XAUUSD',
  'XTIUSD',
  'US500',
  'NAS100',
  'BTCUSD',
] as const

/** The symbols a new account of the group starts with, in display order. */
export function defaultSymbols(stored: string | null): string[] {
  if (stored === null) return [...STARTER_WATCH]
  try {
    const list = JSON.parse(stored)
    return Array.isArray(list) ? list.filter((s): s is string => typeof s === 'string') : []
  } catch {
    return []
  }
}
