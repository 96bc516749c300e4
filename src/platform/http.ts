import { Elysia, ValidationError } from 'elysia'
import type { AppContext } from '../context'
import { ApiError } from './errors'

const REQUEST_ID = /^[A-Za-z0-9._-]{8,128}$/

/**
 * Request ids of this process: a random 80-bit prefix and a counter, unique across instances without a
 * random draw per request.
 */
const nextRequestId = (() => {
  const prefix = Buffer.from(crypto.getRandomValues(new Uint8Array(10))).toString('hex')
  let n = 0
  return () => `${prefix}-${(++n).toString(36)}`
})()

/** Turns Elysia's validation error into a message that names the field. */
export function describeValidation(err: ValidationError): string {
  const first = err.all[0] as { path?: string; message?: string; summary?: string } | undefined
  const type = err.type
  const field = first?.path ? first.path.replace(/^\//, '').replace(/\//g, '.') : ''
  const where = type === 'body' ? '' : `${type} `
  const name = field || (type === 'body' ? 'body' : type)
  return `${where}${name}: ${first?.summary ?? first?.message ?? 'invalid value'}`.trim()
}

const json = (status: number, body: unknown, requestId: string) =>
  new Response(JSON.stringify(body), {
    status,
    headers: { 'content-type': 'application/json', 'x-request-id': requestId },
  })

/**
 * A Response a handler built itself (pre-rendered JSON, files, streams) gets the pending headers of `set`
 * (the request id) written onto it. Left to Elysia, any pending header makes it copy the body into a
 * second Response through a stream, which cost a quarter of a cached watch-list read. Status and
 * cookies stay Elysia's job.
 */
function movePendingHeaders(
  response: unknown,
  set: { headers: Record<string, unknown>; status?: number | string; cookie?: unknown },
): Response | undefined {
  if (!(response instanceof Response) || set.cookie || (set.status !== undefined && set.status !== 200))
    return undefined
  const pending = Object.entries(set.headers)
  if (!pending.every(([, v]) => typeof v === 'string')) return undefined
  for (const [k, v] of pending) {
    if (!response.headers.has(k)) response.headers.set(k, v as string)
    delete set.headers[k]
  }
  return response
}

/**
 * Cross-cutting HTTP behaviour: a request id on every response, one JSON log line per request, and the
 * single error mapping (DESIGN rule 6): `{ error, message? }`, 400 INVALID_DATA for any validation
 * failure, 404 NOT_FOUND for unknown routes, and a 500 that never shows internals.
 */
export const httpPlatform = (ctx: AppContext) =>
  new Elysia({ name: 'http-platform', seed: ctx.instanceId })
    .derive({ as: 'global' }, ({ request, set, server }) => {
      const incoming = request.headers.get('x-request-id')
      const requestId = incoming && REQUEST_ID.test(incoming) ? incoming : nextRequestId()
      set.headers['x-request-id'] = requestId
      // The client address is looked up only by the routes that need it (sign-in throttling).
      const clientIp = () => {
        const forwarded = ctx.config.trustProxy
          ? request.headers.get('x-forwarded-for')?.split(',')[0]?.trim()
          : undefined
        return forwarded || server?.requestIP(request)?.address || 'unknown'
      }
      return { requestId, clientIp, startedAt: performance.now() }
    })
    .mapResponse({ as: 'global' }, ({ responseValue, set }) => movePendingHeaders(responseValue, set))
    .onAfterResponse({ as: 'global' }, ({ request, route, set, requestId, startedAt }) => {
      ctx.logger.log('info', 'request', {
        request_id: requestId,
        method: request.method,
        route,
        status: typeof set.status === 'number' ? set.status : 200,
        duration_ms:
          startedAt === undefined ? undefined : Math.round((performance.now() - startedAt) * 100) / 100,
      })
    })
    .onError({ as: 'global' }, ({ code, error, set, request, requestId }) => {
      const id = requestId ?? (set.headers['x-request-id'] as string | undefined) ?? nextRequestId()
      if (error instanceof ApiError) {
        set.status = error.status
        return json(error.status, error.toBody(), id)
      }
      if (code === 'VALIDATION' && error instanceof ValidationError) {
        set.status = 400
        return json(400, { error: 'INVALID_DATA', message: describeValidation(error) }, id)
      }
      if (code === 'PARSE') {
        set.status = 400
        return json(400, { error: 'INVALID_DATA', message: 'body: malformed request body' }, id)
      }
      if (code === 'NOT_FOUND') {
        set.status = 404
        return json(404, { error: 'NOT_FOUND', message: 'no such route' }, id)
      }
      ctx.logger.log('error', 'unhandled error', {
        request_id: id,
        method: request.method,
        url: new URL(request.url).pathname,
        err: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
        stack: error instanceof Error ? error.stack : undefined,
      })
      set.status = 500
      return json(500, { error: 'INTERNAL_ERROR', message: 'internal server error' }, id)
    })
