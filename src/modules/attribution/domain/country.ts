/**
 * The visitor's country from Cloudflare's `cf-ipcountry` header: two uppercase letters (ISO 3166-1
 * alpha-2). `XX` (unknown) and `T1` (Tor) say nothing about where the visitor is; anything else is not a
 * country code. Those, and a request without the header, are ''.
 */
export function countryOf(header: string | null): string {
  if (!header || !/^[A-Z]{2}$/.test(header) || header === 'XX' || header === 'T1') return ''
  return header
}
