import { spawn } from 'bun'

/** Starts a server script pinned to one core; resolves with its port once it prints READY. */
export async function startPinned(script: string, core: number, env: Record<string, string> = {}) {
  const proc = spawn(['taskset', '-c', String(core), 'bun', script], {
    stdout: 'pipe',
    stderr: 'inherit',
    env: { ...process.env, ...env },
  })
  const reader = proc.stdout.getReader()
  let buf = ''
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${script} did not start`)), 30_000)
    const pump = async (): Promise<void> => {
      const { value, done } = await reader.read()
      if (done) return reject(new Error(`${script} exited`))
      buf += new TextDecoder().decode(value)
      const m = /READY \S+:(\d+)/.exec(buf)
      if (m) {
        clearTimeout(timer)
        return resolve(Number(m[1]))
      }
      return pump()
    }
    void pump()
  })
  // keep draining stdout so the server never blocks on a full pipe
  void (async () => {
    while (!(await reader.read()).done) {}
  })()
  return { port, stop: () => proc.kill('SIGKILL') }
}

/** Runs wrk pinned to another core against loopback; returns requests/second and latency percentiles. */
export async function wrk(
  url: string,
  opts: { core: number; seconds: number; connections: number; headers?: Record<string, string> },
) {
  const args = [
    'taskset',
    '-c',
    String(opts.core),
    'wrk',
    '-t1',
    `-c${opts.connections}`,
    `-d${opts.seconds}s`,
    '--latency',
  ]
  for (const [k, v] of Object.entries(opts.headers ?? {})) args.push('-H', `${k}: ${v}`)
  args.push(url)
  const proc = spawn(args, { stdout: 'pipe', stderr: 'pipe' })
  const out = await new Response(proc.stdout).text()
  await proc.exited
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? 0)
  const non2xx = Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(out)?.[1] ?? 0)
  const p99 = /99%\s+([\d.]+\w+)/.exec(out)?.[1] ?? '?'
  return { rps, non2xx, p99, raw: out }
}
