import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { startRedis } from './redis'
import { type RealServer, serverDir, startRealServer } from './server'
import { startSqld } from './sqld'

/**
 * The operator's scale-out shape (docs/operations.md) on loopback: one sqld, one redis-server, an engine,
 * a standby engine and two API instances (ROLE=api), each its own process, stopped by its process id.
 * `roleAll` starts two ROLE=all instances with the quote simulator instead (the second shape of issue 38).
 */
export async function startScaleShape(
  opts: { roleAll?: boolean; env?: Record<string, string>; transport?: 'ws' | 'http' } = {},
) {
  const [sqld, redis] = await Promise.all([startSqld(), startRedis()])
  const home = serverDir()
  // Hrana over WebSockets unless asked otherwise: what docs/operations.md recommends for Bun instances
  const dbUrl =
    (opts.transport ?? (process.env.SOAK_TRANSPORT as 'ws' | 'http') ?? 'ws') === 'ws'
      ? sqld.url.replace(/^http/, 'ws')
      : sqld.url
  const env = (role: string, extra: Record<string, string> = {}) => ({
    DATABASE_URL: dbUrl,
    REDIS_URL: redis.url,
    ROLE: role,
    LOG_LEVEL: 'warn',
    SIGNIN_MAX_FAILURES_PER_IP: '1000000',
    REGISTER_MAX_PER_HOUR: '1000000',
    ...extra,
    ...opts.env,
  })
  const servers: RealServer[] = []
  const stopAll = async () => {
    await Promise.all(servers.map((s) => s.stop()))
    await Promise.all([sqld.stop(), redis.stop()])
    home.remove()
  }
  try {
    if (opts.roleAll) {
      const sim = { QUOTE_SIMULATOR: '1', QUOTE_TICK_MS: '250' }
      const first = await startRealServer(home.dir, env('all', sim))
      servers.push(first)
      await first.waitForOutput(/engine role taken/)
      servers.push(await startRealServer(home.dir, env('all', sim)))
      return { sqld, redis, api: servers, engine: first, standby: servers[1]!, servers, stop: stopAll }
    }
    const engine = await startRealServer(home.dir, env('engine'))
    servers.push(engine)
    await engine.waitForOutput(/engine role taken/)
    const standby = await startRealServer(home.dir, env('engine'))
    servers.push(standby)
    const api = [await startRealServer(home.dir, env('api')), await startRealServer(home.dir, env('api'))]
    servers.push(...api)
    return { sqld, redis, api, engine, standby, servers, stop: stopAll }
  } catch (e) {
    await stopAll()
    throw e
  }
}

export type ScaleShape = Awaited<ReturnType<typeof startScaleShape>>

/** Resident memory of a process in MB (Linux /proc), or NaN once it is gone. */
export function rssMb(pid: number): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8')
    const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1])
    return Math.round(kb / 1024)
  } catch {
    return Number.NaN
  }
}

/** Bytes under a directory (the sqld database with its WAL). */
export function dirBytes(dir: string): number {
  let total = 0
  for (const name of readdirSync(dir)) {
    const p = join(dir, name)
    const s = statSync(p)
    total += s.isDirectory() ? dirBytes(p) : s.size
  }
  return total
}
