import { Elysia, ValidationError } from 'elysia'
import { isBusy, isUnreachable, rootMessage, stackFrames } from '../db/errors'
import type { Kernel } from '../kernel'
import { Refusal } from '../refusal'
import { DependencyDown } from '../resilience'
import { Overloaded } from '../work-gate'
import { declaredLength, deferredBody } from './body'
import { ApiError } from './errors'

const REQUEST_ID = /^[A-Za-z0-9._-]{8,128}$/

/**
 * Request ids of this process: a random 80-bit prefix and a counter, unique across instances without a
 * random draw per request.
 */
let prefix: string | undefined
let n = 0
// drawn on the first request: Workers refuse random numbers at module scope
const nextRequestId = () => {
  prefix ??= Array.from(crypto.getRandomValues(new Uint8Array(10)), (b) =>
    b.toString(16).padStart(2, '0'),
  ).join('')
  return `${prefix}-${(++n).toString(36)}`
}

/** The caller's request id when it sent a well-formed one, otherwise a new one. */
function requestIdOf(request: Request) {
  const incoming = request.headers.get('x-request-id')
  return incoming && REQUEST_ID.test(incoming) ? incoming : nextRequestId()
}

/**
 * Turns Elysia's validation error into a message that names the field: `volume: required` for a missing
 * field, TypeBox's own wording (`Expected integer`, `Expected integer to be less or equal to 100`) for a
 * wrong one, `must be one of ...` for an enumeration, `extra: not allowed` for an unknown body field.
 */
function describeValidation(err: ValidationError): string {
  const first = err.valueError as
    | { path?: string; message?: string; value?: unknown; schema?: { type?: unknown } }
    | undefined
  const type = err.type
  const field = first?.path ? first.path.replace(/^\//, '').replace(/\//g, '.') : ''
  const where = type === 'body' ? '' : `${type} `
  const name = field || (type === 'body' ? 'body' : type)
  let what = first?.message ?? 'invalid value'
  const values = (first?.schema as { enum?: unknown[] } | undefined)?.enum
  const own = (first?.schema as { 'x-error-message'?: unknown } | undefined)?.['x-error-message']
  if (first && first.value === undefined) what = 'required'
  else if (first?.message === 'Unexpected property') what = 'not allowed'
  else if (values) what = `must be one of ${values.join(', ')}`
  // a field whose rule its schema words itself (a pattern's text says nothing to a client)
  else if (typeof own === 'string') what = own
  return `${where}${name}: ${what}`.trim()
}

/**
 * The code a route's schema declares for a part of its input (`'x-error-code'` on a property's schema,
 * e.g. a copy master's reward_policy answers INVALID_REWARD_POLICY, spec 7.5): the nearest one on the
 * failing field's path; none means INVALID_DATA.
 */
function declaredCode(err: ValidationError): string | undefined {
  const v = err.validator as { schema?: unknown } | undefined
  let node = (v && 'schema' in v ? v.schema : v) as Record<string, any> | undefined
  let found: string | undefined
  const path = (err.valueError?.path ?? '').split('/').filter(Boolean)
  for (const segment of path) {
    node = node?.properties?.[segment] ?? node?.items
    if (!node) break
    if (typeof node['x-error-code'] === 'string') found = node['x-error-code']
  }
  return found
}

/**
 * What a dependency away or busy makes of an error, as the 503 SERVICE_UNAVAILABLE answer words it
 * (`database busy`, `cache unavailable`, ...); null for any other error. A route that stops part way (a
 * group close) adds what it did to it.
 */
export function unavailable(error: unknown): string | null {
  return error instanceof DependencyDown
    ? `${error.dependency} unavailable`
    : error instanceof Overloaded
      ? error.message
      : isBusy(error)
        ? 'database busy'
        : isUnreachable(error)
          ? 'database unavailable'
          : null
}

const json = (status: number, body: unknown, requestId: string) =>
  new Response(JSON.stringify(body), {
    status,
    headers: { 'content-type': 'application/json;charset=utf-8', 'x-request-id': requestId },
  })

/**
 * Puts the request id on the answer. A Response a handler built itself (pre-rendered JSON, files,
 * streams) gets it, with any other pending header of `set`, written onto it: left to Elysia, a pending
 * header makes it copy the body into a second Response through a stream, which cost a quarter of a
 * cached watch-list read. Any other answer gets it through `set`, from which Elysia builds the Response.
 * Status and cookies stay Elysia's job.
 */
function withRequestId(
  response: unknown,
  set: { headers: Record<string, unknown>; status?: number | string; cookie?: unknown },
  requestId: string,
): Response | undefined {
  const pending = set.headers
  if (response instanceof Response && !set.cookie && (set.status === undefined || set.status === 200)) {
    let movable = true
    for (const k in pending) if (typeof pending[k] !== 'string') movable = false
    if (movable) {
      const headers = response.headers
      for (const k in pending) {
        if (!headers.has(k)) headers.set(k, pending[k] as string)
        delete pending[k]
      }
      if (!headers.has('x-request-id')) headers.set('x-request-id', requestId)
      return response
    }
  }
  pending['x-request-id'] = requestId
  return undefined
}

/** The error code each failed request answered, for its log line (set as the error is mapped). */
const codes = new WeakMap<Request, string>()
/** The id an error answer got before any route hook ran (unknown route): the edge's log line uses it. */
const earlyIds = new WeakMap<Request, string>()

/** Whether the answer is the replay of an earlier one under its Idempotency-Key (nothing done again). */
const replayed = (headers: Record<string, unknown>) => headers['idempotent-replayed'] === 'true'

/** An answer's status as a number (Elysia leaves it unset for a 200). */
const statusOf = (status: number | string | undefined) => (typeof status === 'number' ? status : 200)

/**
 * One JSON line per request: its id, method, route, status, error code and time spent up to its answer.
 * Refusals (4xx, and the 5xx refusals the spec names, e.g. 500 OPEN_ORDER_ERROR, 503) are logged at info
 * or warn; an unexpected error is logged at error level with its stack, beside this line.
 */
function logRequest(
  ctx: Kernel,
  method: string,
  route: string | undefined,
  status: number | string | undefined,
  requestId: string | undefined,
  startedAt: number | undefined,
  code?: string,
) {
  const s = statusOf(status)
  ctx.logger.log(s >= 500 && code !== 'INTERNAL_ERROR' ? 'warn' : s >= 500 ? 'error' : 'info', 'request', {
    request_id: requestId,
    method,
    route,
    status: s,
    ...(code ? { code } : {}),
    duration_ms:
      startedAt === undefined ? undefined : Math.round((performance.now() - startedAt) * 100) / 100,
  })
}

/**
 * The client address, for the routes that need it (sign-in throttling). At the edge, Cloudflare's
 * `CF-Connecting-IP` (set by Cloudflare, never by the client). Behind a trusted proxy, the last entry of
 * `X-Forwarded-For`: the one that proxy appended (the first is whatever the client sent, so a client
 * choosing a new one each time would never be limited). Else the socket's address; `unknown` without one.
 */
export function clientIp(
  ctx: Kernel,
  request: Request,
  server: { requestIP(r: Request): { address: string } | null } | null,
) {
  const edge = ctx.edge ? request.headers.get('cf-connecting-ip')?.trim() : undefined
  const forwarded = ctx.config.trustProxy
    ? request.headers.get('x-forwarded-for')?.split(',').at(-1)?.trim()
    : undefined
  return edge || forwarded || server?.requestIP(request)?.address || 'unknown'
}

/**
 * Cross-cutting HTTP behaviour: a request id on every response, one JSON log line per request, and the
 * single error mapping (DESIGN rule 6): `{ error, message? }`, 400 INVALID_DATA for any validation
 * failure, 404 NOT_FOUND for unknown routes, and a 500 that never shows internals.
 */
export const httpPlatform = (ctx: Kernel) => {
  const platform = basePlatform(ctx)
  // at the edge Elysia's dynamic mode runs mapResponse hooks for errors only: the line is written once
  // the answer is out, whatever it was (on Bun this hook would cost ~3 % of a cached read: not there)
  return ctx.edge
    ? platform.onAfterResponse({ as: 'global' }, ({ request, route, set, requestId, startedAt }) => {
        logRequest(
          ctx,
          request.method,
          route,
          set.status,
          requestId ?? earlyIds.get(request) ?? requestIdOf(request),
          startedAt,
          codes.get(request),
        )
        ctx.audit.finish(request, statusOf(set.status), codes.get(request), replayed(set.headers))
      })
    : platform
}

/** The 413 answer for a body announced above every limit of the app; undefined for any other request. */
function oversized(ctx: Kernel, request: Request): Response | undefined {
  const length = declaredLength(request)
  if (length === null || length <= ctx.config.body.hardLimit) return undefined
  const id = requestIdOf(request)
  logRequest(ctx, request.method, new URL(request.url).pathname, 413, id, undefined)
  const message = `body: larger than ${ctx.config.body.hardLimit} bytes`
  return json(413, { error: 'PAYLOAD_TOO_LARGE', message }, id)
}

const basePlatform = (ctx: Kernel) =>
  new Elysia({ name: 'http-platform', seed: ctx.instanceId })
    // A body announced above every limit is refused before anything reads it (the route's guard holds
    // the exact limit of its content type).
    // Elysia awaits an onRequest hook whose source (comments included) looks asynchronous, a `return f(`
    // among them, and every request's routing then waits a turn: this one returns a value it has computed
    .onRequest(function refuseOversized({ request }) {
      const refused = oversized(ctx, request)
      if (refused) return refused
    })
    // The body is read by the route's guard after authentication (kernel/security), not here.
    .onParse({ as: 'global' }, function deferBody() {
      return deferredBody()
    })
    .derive({ as: 'global' }, ({ request, set }) => {
      const requestId = requestIdOf(request)
      // at the edge the answer is built by the adapter alone (no mapResponse hook): the id goes with it
      if (ctx.edge) set.headers['x-request-id'] = requestId
      return { requestId, startedAt: performance.now() }
    })

    // The request's log line is written here, as its answer is mapped (after onError for a route's
    // errors too), not in onAfterResponse: Elysia runs those hooks in a setImmediate of their own per
    // request, which cost ~3% of a cached watch-list read (31.8 vs 32.9 µs). An unknown route has no
    // mapping: onError logs it. A stream is logged as it starts.
    .mapResponse({ as: 'global' }, ({ responseValue, set, requestId, request, route, startedAt }) => {
      if (!ctx.edge) {
        logRequest(ctx, request.method, route, set.status, requestId, startedAt, codes.get(request))
        ctx.audit.finish(request, statusOf(set.status), codes.get(request), replayed(set.headers))
      }
      return withRequestId(responseValue, set, requestId)
    })
    .onError({ as: 'global' }, ({ code, error, set, request, requestId, route }) => {
      // errors raised before the route's hooks ran (unknown route, unreadable body) have no id yet
      const id = requestId ?? requestIdOf(request)
      if (!requestId && ctx.edge) earlyIds.set(request, id)
      if (code === 'NOT_FOUND') {
        codes.set(request, 'NOT_FOUND')
        if (!ctx.edge) logRequest(ctx, request.method, route, 404, id, undefined, 'NOT_FOUND')
      }
      if (error instanceof ApiError) {
        codes.set(request, error.code)
        set.status = error.status
        const res = json(error.status, error.toBody(), id)
        for (const [k, v] of Object.entries(error.headers ?? {})) res.headers.set(k, v)
        return res
      }
      // a module's refusal: its table says the status and code (kernel/refusal.ts)
      if (error instanceof Refusal) {
        codes.set(request, error.code)
        set.status = error.status
        return json(error.status, { error: error.code, message: error.message }, id)
      }
      if (code === 'VALIDATION' && error instanceof ValidationError) {
        const errorCode = declaredCode(error) ?? 'INVALID_DATA'
        codes.set(request, errorCode)
        set.status = 400
        return json(400, { error: errorCode, message: describeValidation(error) }, id)
      }
      const cause = (error as { cause?: unknown }).cause
      if (code === 'PARSE' && cause instanceof ApiError) {
        codes.set(request, cause.code)
        set.status = cause.status
        return json(cause.status, cause.toBody(), id)
      }
      if (code === 'PARSE') {
        codes.set(request, 'INVALID_DATA')
        set.status = 400
        return json(400, { error: 'INVALID_DATA', message: 'body: malformed request body' }, id)
      }
      if (code === 'NOT_FOUND') {
        set.status = 404
        return json(404, { error: 'NOT_FOUND', message: 'no such route' }, id)
      }
      // a dependency away (Redis, sqld): nothing was done, the client may retry (docs/adr/0014)
      const down = unavailable(error)
      if (down) {
        codes.set(request, 'SERVICE_UNAVAILABLE')
        set.status = 503
        const res = json(503, { error: 'SERVICE_UNAVAILABLE', message: `${down}; retry later` }, id)
        res.headers.set('retry-after', String(error instanceof Overloaded ? error.retryAfterS : 1))
        return res
      }
      // the root cause's message and the stack's frames only: a failed query's message (drizzle's) repeats
      // the statement and its parameters, a password hash among them, and the stack starts with it
      ctx.logger.log('error', 'unhandled error', {
        request_id: id,
        method: request.method,
        url: new URL(request.url).pathname,
        err: error instanceof Error ? `${error.name}: ${rootMessage(error)}` : String(error),
        stack: error instanceof Error ? stackFrames(error) : undefined,
      })
      codes.set(request, 'INTERNAL_ERROR')
      set.status = 500
      return json(500, { error: 'INTERNAL_ERROR', message: 'internal server error' }, id)
    })
