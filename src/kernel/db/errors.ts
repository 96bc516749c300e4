/** True when a libSQL error (possibly wrapped by drizzle) is a UNIQUE or PRIMARY KEY violation. */
export function isUniqueViolation(e: unknown): boolean {
  for (let cur: any = e, depth = 0; cur && depth < 5; cur = cur.cause, depth++) {
    const text = `${cur.code ?? ''} ${cur.message ?? ''}`
    if (/UNIQUE constraint failed|PRIMARY KEY|SQLITE_CONSTRAINT_(UNIQUE|PRIMARYKEY)/i.test(text)) return true
  }
  return false
}
