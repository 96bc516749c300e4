/** True when a libSQL error (possibly wrapped by drizzle) is a UNIQUE or PRIMARY KEY violation. */
export function isUniqueViolation(e: unknown): boolean {
  for (let cur: any = e, depth = 0; cur && depth < 5; cur = cur.cause, depth++) {
    const text = `${cur.code ?? ''} ${cur.message ?? ''}`
    if (/UNIQUE constraint failed|PRIMARY KEY|SQLITE_CONSTRAINT_(UNIQUE|PRIMARYKEY)/i.test(text)) return true
  }
  return false
}

/**
 * True when a database error says the server could not be reached (sqld or Turso away) or is over its
 * limit of concurrent requests (HTTP 429), as opposed to a statement that failed: such a request may be
 * retried and is answered 503, not 500.
 */
export function isUnreachable(e: unknown): boolean {
  for (let cur: any = e, depth = 0; cur && depth < 6; cur = cur.cause, depth++) {
    const text = `${cur.code ?? ''} ${cur.message ?? ''}`
    if (
      /ECONNREFUSED|ECONNRESET|ConnectionRefused|ConnectionClosed|fetch failed|Unable to connect|socket connection was closed|HRANA_WEBSOCKET_ERROR|SERVER_ERROR.*(429|50[234])/i.test(
        text,
      )
    )
      return true
  }
  return false
}
