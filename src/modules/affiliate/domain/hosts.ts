import { isSameHostPath } from '../../../kernel/same-host'

/**
 * A hostname as spec 4.17 wants an affiliate_host: no scheme, port, path or user, lower case, labels of
 * letters, digits and inner hyphens, at most 253 characters. Null when it is anything else.
 */
export function hostnameOrNull(raw: string): string | null {
  const h = raw.trim().toLowerCase()
  if (h.length === 0 || h.length > 253) return null
  const labels = h.split('.')
  const ok = labels.every((l) => /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/.test(l))
  return ok ? h : null
}

/**
 * A landing path for a tracking link: absolute on the same host (`/`, `/p/promo?x=1`), never a URL of
 * another host (`//evil.example`, `/\evil`, `https://…`): the redirect must not leave the brand.
 */
export function landingPathOrNull(raw: string): string | null {
  if (raw.length === 0 || raw.length > 512) return null
  if (!isSameHostPath(raw)) return null
  // no whitespace, backslash or control character (a browser would drop or reinterpret them)
  for (const ch of raw) if (ch <= ' ' || ch === '\\' || ch === '\u007f') return null
  try {
    const u = new URL(raw, 'http://brand.invalid')
    if (u.host !== 'brand.invalid') return null
    // the dot segments resolved, `/.//evil.example` is `//evil.example`: another host to a browser
    const path = u.pathname + u.search + u.hash
    return isSameHostPath(path) ? path : null
  } catch {
    return null
  }
}

/** The host of a postback URL when it is http(s) and on the brand's allowlist. */
export function postbackHostAllowed(url: string, allowlist: readonly string[]): boolean {
  let u: URL
  try {
    u = new URL(url)
  } catch {
    return false
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:') return false
  if (u.username || u.password) return false
  return allowlist.includes(u.hostname.toLowerCase())
}
