/** True when a libSQL error (possibly wrapped by drizzle) is a UNIQUE or PRIMARY KEY violation. */
export function isUniqueViolation(e: unknown): boolean {
  for (let cur: any = e, depth = 0; cur && depth < 5; cur = cur.cause, depth++) {
    const text = `${cur.code ?? ''} ${cur.message ?? ''}`
    if (/UNIQUE constraint failed|PRIMARY KEY|SQLITE_CONSTRAINT_(UNIQUE|PRIMARYKEY)/i.test(text)) return true
  }
  return false
}

/**
 * The database could not take a write in time: the write lock was not free, a transaction held its turn
 * too long, or the database did not answer (kernel/db/remote). Nothing was written; the client may retry.
 */
export class DatabaseBusy extends Error {
  override name = 'DatabaseBusy'
}

/**
 * True when a database error says it is busy: SQLITE_BUSY (its write lock not free in time), sqld over
 * its limit of concurrent requests (HTTP 429), or DatabaseBusy. Nothing was done; answered 503.
 */
export function isBusy(e: unknown): boolean {
  for (let cur: any = e, depth = 0; cur && depth < 6; cur = cur.cause, depth++) {
    if (cur instanceof DatabaseBusy) return true
    const text = `${cur.code ?? ''} ${cur.message ?? ''}`
    if (/SQLITE_BUSY|database is locked|SERVER_ERROR.*429|Too Many Requests/i.test(text)) return true
  }
  return false
}

/**
 * True when a database error says the server could not be reached (sqld or Turso away), as opposed to a
 * statement that failed: such a request may be retried and is answered 503, not 500.
 */
export function isUnreachable(e: unknown): boolean {
  for (let cur: any = e, depth = 0; cur && depth < 6; cur = cur.cause, depth++) {
    const text = `${cur.code ?? ''} ${cur.message ?? ''}`
    if (
      /ECONNREFUSED|ECONNRESET|ConnectionRefused|ConnectionClosed|fetch failed|Unable to connect|socket connection was closed|HRANA_WEBSOCKET_ERROR|HRANA_CLOSED_ERROR|SERVER_ERROR.*50[234]/i.test(
        text,
      )
    )
      return true
  }
  return false
}

/**
 * What the database said, under the wrappers: drizzle's "Failed query" repeats the statement and its
 * parameters (nothing to keep in a row or a log line), its cause says what was refused.
 */
export function rootMessage(e: unknown): string {
  let cur: unknown = e
  for (let depth = 0; depth < 6 && cur instanceof Error && cur.cause !== undefined; depth++) cur = cur.cause
  return cur instanceof Error ? cur.message : String(cur)
}

/** Where an error was thrown: its stack's frames, without the message it starts with. */
export const stackFrames = (e: Error) =>
  e.stack
    ?.split('\n')
    .filter((line) => /^\s+at /.test(line))
    .join('\n')
