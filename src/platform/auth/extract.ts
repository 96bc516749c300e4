/** The token from `Authorization: <jwt>`, `Authorization: Bearer <jwt>`, or the session cookie. */
export function extractToken(authorization: string | undefined | null, cookieValue: unknown): string | null {
  if (authorization) {
    const v = authorization.trim()
    const bearer = /^bearer\s+/i.exec(v)
    const token = bearer ? v.slice(bearer[0].length).trim() : v
    return token || null
  }
  return typeof cookieValue === 'string' && cookieValue ? cookieValue : null
}
