// The codes only (not the names in 80 languages that the package's Node entry loads)
import { getAlpha2Codes } from 'i18n-iso-countries/index'

let codes: Set<string> | undefined

/** ISO 3166-1 alpha-2, from a maintained list (i18n-iso-countries): DE, GB, US; not XX, not EU. */
export function isCountryCode(code: string): boolean {
  codes ??= new Set(Object.keys(getAlpha2Codes()))
  return codes.has(code)
}
