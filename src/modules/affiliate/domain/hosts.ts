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

/**
 * An entry of a brand's `postback_hosts`: a hostname, allowing its default ports (80, 443), or
 * `hostname:port`, allowing that port only. Normalised (lower case, the port without leading zeros), or
 * null when it is anything else.
 */
export function postbackHostEntryOrNull(raw: string): string | null {
  const m = /^(.*):(\d{1,5})$/.exec(raw.trim())
  if (!m) return hostnameOrNull(raw)
  const host = hostnameOrNull(m[1]!)
  const port = Number(m[2])
  return host && port >= 1 && port <= 65_535 ? `${host}:${port}` : null
}

/** The host part of an allowlist entry (`host` or `host:port`). */
export const postbackEntryHost = (entry: string) => entry.replace(/:\d+$/, '')

const DEFAULT_PORTS = [80, 443]

/**
 * A postback URL is http(s), without credentials, and its host on the allowlist: a bare hostname entry
 * allows the default ports (80, 443) only, an entry `hostname:port` that port (an endpoint on any other
 * port of an allowed host would reach whatever else listens there).
 */
export function postbackHostAllowed(url: string, allowlist: readonly string[]): boolean {
  let u: URL
  try {
    u = new URL(url)
  } catch {
    return false
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:') return false
  if (u.username || u.password) return false
  const host = u.hostname.toLowerCase()
  // URL leaves out the scheme's own port
  const port = u.port ? Number(u.port) : u.protocol === 'https:' ? 443 : 80
  if (allowlist.includes(`${host}:${port}`)) return true
  return DEFAULT_PORTS.includes(port) && allowlist.includes(host)
}
