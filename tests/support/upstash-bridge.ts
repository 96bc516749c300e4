import { RedisClient } from 'bun'

/**
 * Test-only bridge that speaks the Upstash REST protocol (POST / with a JSON command array, /pipeline,
 * /multi-exec; Bearer token; optional base64 response encoding) to a real redis-server, so the Upstash
 * adapter is exercised against real Redis semantics.
 */
export function startUpstashBridge(redisUrl: string, token: string) {
  const redis = new RedisClient(redisUrl)
  /** Commands run, by name (what a client of the REST protocol costs). */
  const commands = new Map<string, number>()
  const encode = (v: unknown, b64: boolean): unknown => {
    if (!b64) return v
    if (typeof v === 'string') return v === 'OK' ? v : Buffer.from(v, 'utf8').toString('base64')
    if (Array.isArray(v)) return v.map((x) => encode(x, b64))
    return v
  }
  const run = async (cmd: unknown[], b64: boolean) => {
    try {
      const [name, ...args] = cmd.map(String)
      commands.set(name.toUpperCase(), (commands.get(name.toUpperCase()) ?? 0) + 1)
      return { result: encode(await redis.send(name.toUpperCase(), args), b64) }
    } catch (e) {
      return { error: String((e as Error).message ?? e) }
    }
  }
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(req) {
      if (req.headers.get('authorization') !== `Bearer ${token}`)
        return Response.json({ error: 'Unauthorized' }, { status: 401 })
      const b64 = req.headers.get('upstash-encoding') === 'base64'
      const path = new URL(req.url).pathname
      const body = (await req.json()) as unknown[]
      if (path === '/pipeline' || path === '/multi-exec')
        return Response.json(await Promise.all((body as unknown[][]).map((c) => run(c, b64))))
      const r = await run(body, b64)
      return Response.json(r, { status: 'error' in r ? 400 : 200 })
    },
  })
  return {
    url: `http://127.0.0.1:${server.port}`,
    commands,
    stop() {
      server.stop(true)
      redis.close()
    },
  }
}
