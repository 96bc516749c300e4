import { eq } from 'drizzle-orm'
import type { Session } from '../auth/session'
import type { Clock } from '../clock'
import type { Db } from '../db/client'
import { rootMessage } from '../db/errors'
import type { Logger } from '../logger'
import { staffActions } from './schema'

/** Longest body text kept per action: a change's fields, not a file. */
const BODY_CHARS = 8 * 1024
const PATH_CHARS = 2048

/** Field and query names whose values are never stored: passwords, tokens, keys, one-time codes. */
const SECRET = /pass|secret|token|otp|cvv|^pin$|^key$|(api|private|signing|secret)[_-]?key/i

/** A value with every secret-named field replaced, files named by their name and size. */
function redacted(value: unknown, depth = 0): unknown {
  if (value === null || typeof value !== 'object') return value
  if (depth > 8) return '[nested]'
  if (typeof Blob !== 'undefined' && value instanceof Blob)
    return { file: (value as { name?: string }).name ?? null, size: value.size, type: value.type }
  if (Array.isArray(value)) return value.map((v) => redacted(v, depth + 1))
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(value)) out[k] = SECRET.test(k) ? '[redacted]' : redacted(v, depth + 1)
  return out
}

/** The body as stored: JSON of its redacted value, cut to a bound; null when there is none. */
export function bodyText(body: unknown): string | null {
  if (body === undefined || body === null || body === '') return null
  const text = typeof body === 'string' ? body : JSON.stringify(redacted(body))
  return text.length > BODY_CHARS ? `${text.slice(0, BODY_CHARS)}…[cut]` : text
}

/** The path and query of a URL, secret-named query values redacted. */
export function pathText(url: string): string {
  const u = new URL(url)
  for (const k of [...u.searchParams.keys()]) if (SECRET.test(k)) u.searchParams.set(k, '[redacted]')
  const text = u.pathname + u.search
  return text.length > PATH_CHARS ? `${text.slice(0, PATH_CHARS)}…[cut]` : text
}

/** Whose request it is: a staff session's role as the audit names it. */
const ROLE: Partial<Record<Session['type'], string>> = {
  SESSION_MANAGER: 'MANAGER',
  SESSION_ADMIN: 'ADMIN',
  SESSION_DEALER: 'DEALER',
}

/** Whether a staff session's request is recorded: its changes, and the reads a route opts in. */
export function audited(session: Session, method: string, rule: false | 'read' | undefined) {
  if (rule === false || !ROLE[session.type]) return false
  return method === 'GET' || method === 'HEAD' ? rule === 'read' : true
}

/**
 * The staff audit trail (docs/adr/0027). `begin` writes the action before the route runs, so no change
 * is made without its record (a write that fails answers 503 and nothing is done); `finish` writes the
 * answer's status and code once it is known, after the answer (a lost outcome leaves the status null:
 * asked, outcome unknown). `settled` is what the edge waits on before its isolate drops the request.
 */
export class StaffAudit {
  private readonly open = new WeakMap<Request, number>()
  private readonly writing = new Set<Promise<unknown>>()

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly logger: Logger,
  ) {}

  async begin(request: Request, route: string, session: Session, body: unknown, requestId: string) {
    const [row] = await this.db
      .insert(staffActions)
      .values({
        brandId: session.brandId,
        staffId: session.staffId ?? 0,
        staffLogin: session.login ?? null,
        role: ROLE[session.type] ?? session.type,
        at: this.clock.now(),
        method: request.method,
        route,
        path: pathText(request.url),
        body: bodyText(body),
        requestId,
      })
      .returning({ id: staffActions.id })
    this.open.set(request, row.id)
  }

  /** Records the outcome of a request `begin` recorded; nothing for any other. Never throws. */
  finish(request: Request, status: number, code: string | undefined) {
    const id = this.open.get(request)
    if (id === undefined) return
    this.open.delete(request)
    const p = this.db
      .update(staffActions)
      .set({ status, code: code ?? null })
      .where(eq(staffActions.id, id))
      .then(
        () => {},
        (e: unknown) =>
          this.logger.log('warn', 'staff action outcome not recorded', {
            action: id,
            status,
            err: e instanceof Error ? rootMessage(e) : String(e),
          }),
      )
      .finally(() => this.writing.delete(p))
    this.writing.add(p)
  }

  /** Settles once the outcomes being written now are written (or failed). */
  async settled() {
    while (this.writing.size > 0) await Promise.allSettled([...this.writing])
  }
}
