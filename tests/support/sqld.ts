import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort, waitFor } from './ports'

export interface SqldServer {
  /** http://127.0.0.1:PORT, for @libsql/client. */
  url: string
  pid: number
  /** The directory of its database files. */
  dir: string
  stop(): Promise<void>
}

/** The sqld binary (scripts/ensure-sqld.sh installs it into .tools/ on first use). */
function sqldBinary(): string {
  const r = Bun.spawnSync(['bash', 'scripts/ensure-sqld.sh'], { stderr: 'inherit' })
  if (r.exitCode !== 0) throw new Error('scripts/ensure-sqld.sh failed')
  return r.stdout.toString().trim().split('\n').pop() as string
}

/** Starts a real libSQL server (sqld) on a free loopback port with a fresh database; stopped by its pid. */
export async function startSqld(): Promise<
  SqldServer & { crash(): Promise<void>; restart(): Promise<void> }
> {
  const bin = sqldBinary()
  const dir = mkdtempSync(join(tmpdir(), 'tcs-sqld-'))
  const port = await freePort()
  const url = `http://127.0.0.1:${port}`
  const spawn = async () => {
    const proc = Bun.spawn(
      [bin, '--no-welcome', '--db-path', join(dir, 'data.sqld'), '--http-listen-addr', `127.0.0.1:${port}`],
      { stdout: 'ignore', stderr: 'pipe', env: { ...process.env, RUST_LOG: 'error' } },
    )
    await waitFor(async () => (await fetch(`${url}/health`)).ok, 20_000, `sqld on ${port}`)
    return proc
  }
  let proc = await spawn()
  const kill = async () => {
    if (proc.exitCode === null && proc.signalCode === null) {
      proc.kill('SIGKILL')
      await proc.exited
    }
  }
  return {
    url,
    dir,
    get pid() {
      return proc.pid
    },
    /** Kills the server, keeping its database (a fault test restarts it on the same port). */
    crash: kill,
    async restart() {
      await kill()
      proc = await spawn()
    },
    async stop() {
      await kill()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
