import { RedisClient } from 'bun'
import { freePort, waitFor } from './ports'

export interface RedisServer {
  url: string
  port: number
  pid: number
  stop(): Promise<void>
}

/** Starts a real redis-server on a free loopback port; stop() kills exactly that process. */
export async function startRedis(port?: number): Promise<RedisServer> {
  const p = port ?? (await freePort())
  const proc = Bun.spawn(
    [
      'redis-server',
      '--port',
      String(p),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--protected-mode',
      'no',
    ],
    { stdout: 'ignore', stderr: 'inherit' },
  )
  const url = `redis://127.0.0.1:${p}`
  await waitFor(
    async () => {
      const c = new RedisClient(url, { connectionTimeout: 200, autoReconnect: false })
      try {
        return (await c.send('PING', [])) === 'PONG'
      } finally {
        c.close()
      }
    },
    10_000,
    `redis-server on ${p}`,
  )
  return {
    url,
    port: p,
    pid: proc.pid,
    async stop() {
      if (proc.exitCode !== null || proc.signalCode !== null) return
      proc.kill('SIGKILL')
      await proc.exited
    },
  }
}
