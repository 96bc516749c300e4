import { eq } from 'drizzle-orm'
import { type Session, staffRoleSession } from '../auth/session'
import type { Clock } from '../clock'
import type { Db } from '../db/client'
import { rootMessage } from '../db/errors'
import type { Logger } from '../logger'
import { DependencyDown } from '../resilience'
import { staffActions } from './schema'

/** Longest body text kept per action: a change's fields, not a file. */
const BODY_CHARS = 8 * 1024
const PATH_CHARS = 2048
const KEY_CHARS = 255
/** Price batches are written in groups: at most this long after their answer, or this many at once. */
const BATCH_MS = 1000
const BATCH_ROWS = 200

/**
 * Field and query names whose text values are never stored: passwords, tokens, keys, one-time codes. By
 * the name's end, so a setting about one (`enable_change_password: 0`) or a `passport_number` is kept.
 */
const SECRET =
  /(password|passwd|pwd|secret|token|otp|cvv|cvc|pin|apikey|api_key|private_key|signing_key|credentials|authorization|signature)$|^key$/i

/** A value with every secret-named text replaced, files named by their name and size. */
function redacted(value: unknown, depth = 0): unknown {
  if (value === null || typeof value !== 'object') return value
  if (depth > 8) return '[nested]'
  if (typeof Blob !== 'undefined' && value instanceof Blob)
    return { file: (value as { name?: string }).name ?? null, size: value.size, type: value.type }
  if (Array.isArray(value)) return value.map((v) => redacted(v, depth + 1))
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(value))
    out[k] =
      SECRET.test(k) && (typeof v === 'string' || (v !== null && typeof v === 'object'))
        ? '[redacted]'
        : redacted(v, depth + 1)
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

/** Whose request it is: a staff session's role as the audit names it (the inverse of staffRoleSession). */
const ROLE: Partial<Record<Session['type'], string>> = Object.fromEntries(
  Object.entries(staffRoleSession).map(([role, type]) => [type, role]),
)

/**
 * How a route's staff requests are recorded: by default its changes, each before it runs; `read` its reads
 * too; `batched` (price batches, many a second) each once answered, written in groups.
 */
export type AuditRule = 'read' | 'batched'

/** Whether a staff session's request is recorded: its changes, and the reads a route opts in. */
export function audited(session: Session, method: string, rule: AuditRule | undefined) {
  if (!ROLE[session.type]) return false
  return method === 'GET' || method === 'HEAD' ? rule === 'read' : true
}

type Row = typeof staffActions.$inferInsert

/**
 * The staff audit trail (docs/adr/0027). `begin` writes the action before the route runs, so no change
 * is made without its record (a write that fails answers 503 and nothing is done); `finish` writes the
 * answer's status and code once it is known, after the answer (a lost outcome leaves the status null:
 * asked, outcome unknown). A `batched` route's rows are written whole once answered, in groups (a process
 * that dies loses at most its last second of them). `settled` is what the edge waits on before its
 * isolate drops the request.
 */
export class StaffAudit {
  private readonly open = new WeakMap<Request, number | Row>()
  private readonly writing = new Set<Promise<unknown>>()
  private batch: Row[] = []
  private timer: ReturnType<typeof setTimeout> | undefined

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly logger: Logger,
    /** At the edge nothing runs after a request's waitUntil: a batch is written with its request. */
    private readonly edge: boolean,
  ) {}

  async begin(
    request: Request,
    route: string,
    session: Session,
    body: unknown,
    requestId: string,
    rule: AuditRule | undefined,
  ) {
    const row: Row = {
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
      idempotencyKey: request.headers.get('idempotency-key')?.slice(0, KEY_CHARS) ?? null,
    }
    if (rule === 'batched') {
      this.open.set(request, row)
      return
    }
    let id: number
    try {
      ;[{ id }] = await this.db.insert(staffActions).values(row).returning({ id: staffActions.id })
    } catch (e) {
      // whatever stopped the record (the database away, full, not migrated) stops the change: 503
      throw new DependencyDown('audit trail', e instanceof Error ? rootMessage(e) : String(e))
    }
    this.open.set(request, id)
  }

  /** Records the outcome of a request `begin` recorded; nothing for any other. Never throws. */
  finish(request: Request, status: number, code: string | undefined, replayed: boolean) {
    const open = this.open.get(request)
    if (open === undefined) return
    this.open.delete(request)
    const outcome = { status, code: code ?? null, replayed: replayed ? 1 : 0 }
    if (typeof open === 'number')
      this.track(this.db.update(staffActions).set(outcome).where(eq(staffActions.id, open)), `action ${open}`)
    else {
      this.batch.push({ ...open, ...outcome })
      if (this.edge || this.batch.length >= BATCH_ROWS) this.flush()
      else if (!this.timer) {
        this.timer = setTimeout(() => this.flush(), BATCH_MS)
        // a batch waiting never keeps a process up: a stop writes it (settled)
        ;(this.timer as { unref?: () => void }).unref?.()
      }
    }
  }

  /** Settles once what is recorded now is written (or failed). */
  async settled() {
    this.flush()
    while (this.writing.size > 0) await Promise.allSettled([...this.writing])
  }

  private flush() {
    if (this.timer) clearTimeout(this.timer)
    this.timer = undefined
    if (this.batch.length === 0) return
    const rows = this.batch
    this.batch = []
    this.track(this.db.insert(staffActions).values(rows), `${rows.length} batched actions`)
  }

  private track(write: PromiseLike<unknown>, what: string) {
    const p: Promise<void> = Promise.resolve(write)
      .then(
        () => {},
        (e: unknown) =>
          this.logger.log('warn', 'staff audit not recorded', {
            what,
            err: e instanceof Error ? rootMessage(e) : String(e),
          }),
      )
      .finally(() => this.writing.delete(p))
    this.writing.add(p)
  }
}
