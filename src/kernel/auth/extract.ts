import { parse } from 'cookie'

/**
 * The token from `Authorization: <jwt>`, `Authorization: Bearer <jwt>`, or the session cookie. The Cookie
 * header is parsed only when there is no Authorization header (most API clients send one).
 */
export function extractToken(
  authorization: string | undefined | null,
  cookieHeader: string | undefined | null,
  cookieName: string,
): string | null {
  if (authorization) {
    const v = authorization.trim()
    const bearer = /^bearer\s+/i.exec(v)
    const token = bearer ? v.slice(bearer[0].length).trim() : v
    return token || null
  }
  if (!cookieHeader) return null
  return parse(cookieHeader)[cookieName] || null
}
