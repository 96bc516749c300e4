import { createServer } from 'node:net'

/** A free TCP port on 127.0.0.1 (the OS picks it). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer()
    srv.once('error', reject)
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port
      srv.close(() => resolve(port))
    })
  })
}

export async function waitFor(check: () => Promise<boolean>, timeoutMs = 10_000, what = 'condition') {
  const until = Date.now() + timeoutMs
  while (Date.now() < until) {
    if (await check().catch(() => false)) return
    await Bun.sleep(50)
  }
  throw new Error(`timed out waiting for ${what}`)
}
