/** Structured JSON-lines logger. Callers never pass secrets; `redact` guards the common field names anyway. */
type Level = 'debug' | 'info' | 'warn' | 'error'
type LogLevel = Level | 'silent'
export interface Logger {
  log(level: Level, msg: string, fields?: Record<string, unknown>): void
}

const order: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 }
const secretKeys = /pass(word)?|secret|token|authorization|cookie/i

const secretKeyMemo = new Map<string, boolean>()
/** Whether a field name looks secret; field names repeat on every line, so the answer is remembered. */
function isSecretKey(k: string) {
  let s = secretKeyMemo.get(k)
  if (s === undefined) {
    s = secretKeys.test(k)
    if (secretKeyMemo.size < 1000) secretKeyMemo.set(k, s)
  }
  return s
}

function redact(fields: Record<string, unknown>): Record<string, unknown> {
  for (const k in fields) if (isSecretKey(k)) return redactCopy(fields)
  return fields
}

function redactCopy(fields: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const k in fields) out[k] = isSecretKey(k) ? '[redacted]' : fields[k]
  return out
}

let lastMs = 0
let lastIso = ''
/** ISO time, formatted at most once per millisecond (many request lines share one). */
function isoNow() {
  const ms = Date.now()
  if (ms !== lastMs) {
    lastMs = ms
    lastIso = new Date(ms).toISOString()
  }
  return lastIso
}

/**
 * Default sink: lines are joined and written to stdout in batches (one write per ~10 ms), because a
 * synchronous write per request line costs more than the request itself on the hot path.
 */
function batchedStdout(flushMs = 10): (line: string) => void {
  let pending: string[] = []
  let timer: ReturnType<typeof setTimeout> | null = null
  const flush = () => {
    timer = null
    if (pending.length === 0) return
    const chunk = `${pending.join('\n')}\n`
    pending = []
    process.stdout.write(chunk)
  }
  process.once('exit', flush)
  return (line) => {
    pending.push(line)
    if (pending.length >= 512) flush()
    else if (timer === null) timer = setTimeout(flush, flushMs)
  }
}

export function createLogger(minLevel: LogLevel, write: (line: string) => void = batchedStdout()): Logger {
  const min = order[minLevel]
  return {
    log(level, msg, fields) {
      if (order[level] < min) return
      // the fields are serialized on their own and spliced in: spreading them into a new object cost more
      // than the serialization on a line per request
      const head = `{"t":"${isoNow()}","level":"${level}","msg":${JSON.stringify(msg)}`
      const rest = fields ? JSON.stringify(redact(fields)) : '{}'
      write(rest.length > 2 ? `${head},${rest.slice(1)}` : `${head}}`)
    },
  }
}

export const silentLogger: Logger = { log() {} }
