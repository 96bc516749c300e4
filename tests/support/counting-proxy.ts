/**
 * A counting HTTP proxy, for what one Worker request spends of its subrequests (Cloudflare counts each
 * fetch of an invocation: every libSQL HTTP call, every Upstash REST call). Its target is set later (the
 * edge shape makes its sqld inside startEdgeShape); until then it answers 503. Bodies pass through, and a
 * client that leaves aborts the forwarded call, as it would without the proxy.
 */
export function countingProxy() {
  let target = ''
  let hits = 0
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    idleTimeout: 0,
    async fetch(req) {
      if (!target) return new Response('not yet', { status: 503 })
      hits++
      const url = new URL(req.url)
      const headers = new Headers(req.headers)
      headers.delete('host')
      const body = req.method === 'GET' || req.method === 'HEAD' ? undefined : await req.arrayBuffer()
      const r = await fetch(target + url.pathname + url.search, {
        method: req.method,
        headers,
        body,
        signal: req.signal,
      })
      const h = new Headers(r.headers)
      // fetch decoded the body already
      h.delete('content-encoding')
      h.delete('content-length')
      return new Response(r.body, { status: r.status, headers: h })
    },
  })
  return {
    url: `http://127.0.0.1:${server.port}`,
    setTarget(t: string) {
      target = t
    },
    /** Calls forwarded since the start or the last reset. */
    get hits() {
      return hits
    },
    reset() {
      hits = 0
    },
    stop() {
      server.stop(true)
    },
  }
}
