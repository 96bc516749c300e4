import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort, waitFor } from './ports'
import { collectOutput } from './server'

export interface WranglerDev {
  url: string
  pid: number
  output(): string
  stop(): Promise<void>
}

/** Node 22 and wrangler (scripts/ensure-wrangler.sh installs them into .tools/ on first use). */
function wranglerTools(): { node: string; wrangler: string } {
  const r = Bun.spawnSync(['bash', 'scripts/ensure-wrangler.sh'], { stderr: 'inherit' })
  if (r.exitCode !== 0) throw new Error('scripts/ensure-wrangler.sh failed')
  const [node, wrangler] = r.stdout.toString().trim().split('\n').slice(-2)
  return { node, wrangler }
}

/**
 * Runs the Workers entry (wrangler.toml) under `wrangler dev` (workerd, local mode) on a free loopback
 * port with the given variables, and with /__scheduled to fire `scheduled()`. Stopped by its pid.
 */
export async function startWranglerDev(
  vars: Record<string, string>,
  opts: { port?: number } = {},
): Promise<WranglerDev> {
  const { node, wrangler } = wranglerTools()
  const port = opts.port ?? (await freePort())
  const inspector = await freePort()
  const state = mkdtempSync(join(tmpdir(), 'tcs-wrangler-'))
  const args = [
    wrangler,
    'dev',
    '--config',
    'wrangler.toml',
    '--ip',
    '127.0.0.1',
    '--port',
    String(port),
    '--inspector-port',
    String(inspector),
    '--persist-to',
    state,
    '--test-scheduled',
    '--show-interactive-dev-session=false',
    '--log-level',
    'log',
    // the demo's forex trades at weekends too: no test depends on the day it runs
    ...Object.entries({ DEMO_WEEKEND_TRADING: '1', ...vars }).flatMap(([k, v]) => ['--var', `${k}:${v}`]),
  ]
  const proc = Bun.spawn([node, ...args], {
    env: { ...process.env, WRANGLER_SEND_METRICS: 'false', CI: '1', NO_COLOR: '1' },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const output = collectOutput(proc)
  const url = `http://127.0.0.1:${port}`
  try {
    await waitFor(
      async () => {
        if (proc.exitCode !== null || /failed to start/.test(output.text))
          throw new Error('wrangler dev did not start')
        return (await fetch(`${url}/health`)).status > 0
      },
      90_000,
      'wrangler dev',
    )
  } catch (e) {
    await stopTree(proc)
    throw new Error(`${(e as Error).message}\n${output.text}`)
  }
  return {
    url,
    pid: proc.pid,
    output: () => output.text,
    async stop() {
      await stopTree(proc)
      rmSync(state, { recursive: true, force: true })
    },
  }
}

/**
 * wrangler runs workerd as its child: both go, found by parent pid (never by name), and only while
 * wrangler still runs: once it has exited, its pid may belong to another process.
 */
async function stopTree(proc: Bun.Subprocess) {
  if (proc.exitCode !== null || proc.signalCode !== null) return
  const below = (pid: number | string) =>
    Bun.spawnSync(['pgrep', '-P', String(pid)])
      .stdout.toString()
      .split('\n')
      .filter(Boolean)
  const children = below(proc.pid)
  const grandchildren = children.flatMap(below)
  proc.kill('SIGKILL')
  for (const p of [...children, ...grandchildren].map(Number))
    try {
      process.kill(p, 'SIGKILL')
    } catch {}
  await proc.exited
}
