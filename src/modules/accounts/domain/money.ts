/** Decimals of each currency's minor unit (ISO 4217); unknown currencies use 2. */
const DECIMALS: Record<string, number> = { JPY: 0, KRW: 0, HUF: 2, KWD: 3, BHD: 3, BTC: 8 }

export const currencyDecimals = (currency: string) => DECIMALS[currency.toUpperCase()] ?? 2

/** Major units -> integer minor units; null when the amount has more precision than the currency. */
export function toMinor(amount: number, currency: string): number | null {
  const d = currencyDecimals(currency)
  const scaled = Math.round(amount * 10 ** d)
  if (!Number.isFinite(amount) || Math.abs(scaled - amount * 10 ** d) > 1e-6 * Math.max(1, Math.abs(scaled)))
    return null
  if (!Number.isSafeInteger(scaled)) return null
  return scaled
}

export const fromMinor = (minor: number, currency: string) => minor / 10 ** currencyDecimals(currency)

/** A computed amount (profit, swap, commission) rounded half away from zero to integer minor units. */
export function roundToMinor(amount: number, currency: string): number {
  const scaled = amount * 10 ** currencyDecimals(currency)
  return Math.sign(scaled) * Math.round(Math.abs(scaled))
}
