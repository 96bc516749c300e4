/** Structured JSON-lines logger. Callers never pass secrets; `redact` guards the common field names anyway. */
export type Level = 'debug' | 'info' | 'warn' | 'error'
export type LogLevel = Level | 'silent'
export interface Logger {
  log(level: Level, msg: string, fields?: Record<string, unknown>): void
}

const order: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 }
const secretKeys = /pass(word)?|secret|token|authorization|cookie/i

function redact(fields: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(fields)) out[k] = secretKeys.test(k) ? '[redacted]' : v
  return out
}

export function createLogger(minLevel: LogLevel, write: (line: string) => void = console.log): Logger {
  const min = order[minLevel]
  return {
    log(level, msg, fields) {
      if (order[level] < min) return
      write(JSON.stringify({ t: new Date().toISOString(), level, msg, ...(fields ? redact(fields) : {}) }))
    },
  }
}

export const silentLogger: Logger = { log() {} }
