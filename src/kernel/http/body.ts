import { ApiError, invalid } from './errors'
import { refuseUnsafeText } from './safe-text'

/**
 * What a route accepts as its body: a JSON value (the default), a JSON object that may be left out (read
 * as `{}`), a multipart form (uploads), nothing (a body sent anyway is not read), or the exact UTF-8 text
 * (a signed webhook, verified over its bytes before it is parsed).
 */
export type BodyKind = 'json' | 'optional-json' | 'multipart' | 'none' | 'raw'

const DEFERRED = Symbol('deferred body')

/**
 * Elysia's parse phase yields this instead of a body; the route guard reads the body after authenticating
 * and fills it in (`fillDeferred`). A fresh object per request: Elysia's dynamic mode (the edge) validates
 * the object its parse phase produced, not the one the guard put on the context.
 */
export const deferredBody = (): Record<PropertyKey, unknown> => ({ [DEFERRED]: true })

export const isDeferred = (body: unknown): body is Record<PropertyKey, unknown> =>
  typeof body === 'object' && body !== null && DEFERRED in body

/** Copies a JSON object body into the placeholder the parse phase produced; returns the body. */
export function fillDeferred(holder: Record<PropertyKey, unknown>, body: unknown) {
  delete holder[DEFERRED]
  // a "__proto__" key never gets here: refused as the body was read (safe-text.ts)
  if (body && typeof body === 'object' && !Array.isArray(body)) Object.assign(holder, body)
  return body
}

const tooLarge = (limit: number) => new ApiError(413, 'PAYLOAD_TOO_LARGE', `body: larger than ${limit} bytes`)

/** The declared length of a request body, or null when it is not announced (chunked). */
export function declaredLength(request: Request): number | null {
  const v = request.headers.get('content-length')
  if (v === null) return null
  const n = Number(v)
  return Number.isSafeInteger(n) && n >= 0 ? n : null
}

/** Whether the client announced a body (a length above 0, or a chunked transfer). */
export const announcesBody = (request: Request) =>
  (declaredLength(request) ?? 0) > 0 || request.headers.has('transfer-encoding')

/** Reads the body's bytes, refusing (413) as soon as it grows past `limit`, announced or not. */
async function readCapped(request: Request, limit: number): Promise<Uint8Array> {
  const declared = declaredLength(request)
  if (declared !== null && declared > limit) throw tooLarge(limit)
  if (!request.body) return new Uint8Array(0)
  // an announced length within the limit: the runtime reads it at once (it stops at that length)
  if (declared !== null && !request.headers.has('transfer-encoding'))
    return new Uint8Array(await request.arrayBuffer())
  const reader = request.body.getReader()
  const chunks: Uint8Array[] = []
  let size = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    size += value.byteLength
    if (size > limit) {
      await reader.cancel().catch(() => {})
      throw tooLarge(limit)
    }
    chunks.push(value)
  }
  if (chunks.length === 1) return chunks[0]
  const out = new Uint8Array(size)
  let at = 0
  for (const c of chunks) {
    out.set(c, at)
    at += c.byteLength
  }
  return out
}

const mediaType = (request: Request) =>
  (request.headers.get('content-type') ?? '').split(';')[0].trim().toLowerCase()

const utf8 = new TextDecoder('utf-8', { fatal: true })

/** A multipart form as Elysia's own parser shapes it: one value per field, repeated fields as arrays. */
function formObject(form: FormData): Record<string, unknown> {
  // built from entries, not assigned: a field named "__proto__" stays a key, which the walk refuses
  const out: Record<string, unknown> = Object.fromEntries(
    [...new Set(form.keys())].map((key) => {
      const all = form.getAll(key)
      return [key, all.length === 1 ? all[0] : all]
    }),
  )
  refuseUnsafeText(out)
  return out
}

/**
 * The body of a request, read strictly: no body is `undefined`; a route accepting JSON takes
 * `application/json` only (valid UTF-8, well-formed), an upload route `multipart/form-data` only. Any
 * other content type, a malformed body, or a JSON value that is not an object, is 400 INVALID_DATA naming the body; more than `limit`
 * bytes is 413 PAYLOAD_TOO_LARGE.
 */
export async function readBody(request: Request, kind: BodyKind, limit: number): Promise<unknown> {
  if (kind === 'raw') {
    try {
      return utf8.decode(await readCapped(request, limit))
    } catch (e) {
      if (e instanceof ApiError) throw e
      throw invalid('body: not valid UTF-8')
    }
  }
  if (kind !== 'multipart' && mediaType(request) === 'application/json') {
    const declared = declaredLength(request)
    // the common case, an announced JSON body within the limit, parsed natively (no copy of its bytes)
    if (declared !== null && declared > 0 && declared <= limit && !request.headers.has('transfer-encoding'))
      return objectOnly(
        await request.json().catch(() => {
          throw invalid('body: malformed JSON')
        }),
      )
  }
  const bytes = await readCapped(request, limit)
  if (bytes.byteLength === 0) return kind === 'optional-json' ? {} : undefined
  const type = mediaType(request)
  if (kind === 'multipart') {
    if (type !== 'multipart/form-data') throw invalid('body: content-type must be multipart/form-data')
    let form: FormData
    try {
      form = await new Response(bytes as Uint8Array<ArrayBuffer>, {
        headers: { 'content-type': request.headers.get('content-type')! },
      }).formData()
    } catch {
      throw invalid('body: malformed multipart/form-data')
    }
    // outside the parse's catch: a refused value names its field
    return formObject(form)
  }
  if (type !== 'application/json') throw invalid('body: content-type must be application/json')
  let text: string
  try {
    text = utf8.decode(bytes)
  } catch {
    throw invalid('body: not valid UTF-8')
  }
  return jsonObject(text)
}

function jsonObject(text: string): object {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    throw invalid('body: malformed JSON')
  }
  return objectOnly(value)
}

function objectOnly(value: unknown): object {
  // Every body of this API is an object; Elysia's normalization would turn an array into {}.
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw invalid('body: must be a JSON object')
  refuseUnsafeText(value)
  return value
}
