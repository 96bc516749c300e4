/** Methods whose requests carry no body the app reads. */
const BODILESS = new Set(['GET', 'HEAD', 'OPTIONS'])

/**
 * A request as workerd hands it, made to reach the routes as Bun.serve's requests do (Elysia runs in its
 * dynamic mode at the edge):
 * - HEAD is routed as GET, and `answered` drops the body: the dynamic router has no HEAD routes (404
 *   before), where Bun's Elysia answers HEAD as GET;
 * - a write sent without a body (and so without a content type) is given the JSON type: the dynamic mode
 *   runs no parse phase for a request without a content type, so the route validated no body at all
 *   (400 "body: required" on routes whose body may be left out, such as PUT /account/me). A body sent
 *   without a type keeps none, and is refused for it as on Bun.
 */
export function asServed(request: Request): Request {
  if (request.method === 'HEAD') return new Request(request, { method: 'GET' })
  if (BODILESS.has(request.method) || request.headers.has('content-type')) return request
  const empty = request.body === null || request.headers.get('content-length') === '0'
  if (!empty) return request
  const headers = new Headers(request.headers)
  headers.set('content-type', 'application/json')
  // a stream: the parse phase runs only for a request with a body
  const body = new ReadableStream<Uint8Array>({ start: (c) => c.close() })
  return new Request(request, { headers, body })
}

/** Bun's `Response.json` names the charset; workerd's does not: one answer on both runtimes. */
const JSON_TYPE = 'application/json;charset=utf-8'

/** The app's answer to `request`: JSON with the charset Bun names, and without its body for HEAD. */
export function answered(request: Request, response: Response): Response {
  if (response.headers.get('content-type') === 'application/json')
    response.headers.set('content-type', JSON_TYPE)
  if (request.method !== 'HEAD') return response
  response.body?.cancel().catch(() => {})
  return new Response(null, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  })
}
