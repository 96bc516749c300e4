/** Decimals of each currency's minor unit (ISO 4217); unknown currencies use 2. */
const DECIMALS: Record<string, number> = { JPY: 0, KRW: 0, HUF: 2, KWD: 3, BHD: 3, BTC: 8 }

export const currencyDecimals = (currency: string) => DECIMALS[currency.toUpperCase()] ?? 2

/** Major units -> integer minor units; null when the amount has more precision than the currency. */
export function toMinor(amount: number, currency: string): number | null {
  const d = currencyDecimals(currency)
  if (!Number.isFinite(amount)) return null
  const exact = amount * 10 ** d
  const scaled = Math.round(exact)
  // more decimals than the currency has is refused at any size: the decimals as written, or only the
  // binary noise of a computed sum (0.1 + 0.2) beyond them. A relative tolerance let 5000.004 pass as
  // 5000.00 while 20.004 was refused.
  if (decimalsOf(amount) > d && Math.abs(exact - scaled) > 1e-6) return null
  if (!Number.isSafeInteger(scaled)) return null
  return scaled
}

/**
 * Decimal places of a number as written: JavaScript prints the shortest text that reads back as the same
 * double, so 20.01 has 2 and 5000.004 has 3, whatever the binary error of the double underneath.
 */
function decimalsOf(x: number): number {
  const m = /^(\d+)(?:\.(\d+))?(?:e([+-]\d+))?$/.exec(String(Math.abs(x)))
  if (!m) return Number.POSITIVE_INFINITY
  return Math.max(0, (m[2]?.length ?? 0) - Number(m[3] ?? 0))
}

export const fromMinor = (minor: number, currency: string) => minor / 10 ** currencyDecimals(currency)

/** A computed amount in major units rounded to its currency's minor unit (2 decimals for USD, 0 for JPY, 8 for BTC). */
export const roundToCurrency = (amount: number, currency: string) =>
  fromMinor(roundToMinor(amount, currency), currency)

/**
 * Reads an event payload written before its amounts were integer minor units (issue 42): each legacy
 * major field becomes its `_minor` field at its currency's decimals (`currency` of the payload). One in
 * the current shape passes unchanged. For `z.preprocess` in the schemas of the topics that changed.
 */
export function upgradeMajorFields(fields: Record<string, string>) {
  return (value: unknown) => {
    if (!value || typeof value !== 'object' || Array.isArray(value)) return value
    const legacy = value as Record<string, unknown>
    // the current shape passes as it is (no copy per delivered event)
    if (!Object.keys(fields).some((major) => typeof legacy[major] === 'number')) return value
    const v: Record<string, unknown> = { ...legacy }
    const currency = typeof v.currency === 'string' ? v.currency : ''
    for (const [major, minor] of Object.entries(fields))
      if (typeof v[major] === 'number' && v[minor] === undefined) {
        v[minor] = roundToMinor(v[major] as number, currency)
        delete v[major]
      }
    return v
  }
}

/** A computed amount (profit, swap, commission) rounded half away from zero to integer minor units. */
export function roundToMinor(amount: number, currency: string): number {
  const scaled = amount * 10 ** currencyDecimals(currency)
  return Math.sign(scaled) * Math.round(Math.abs(scaled))
}
