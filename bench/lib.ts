import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { spawn } from 'bun'

/**
 * Starts a server script pinned to one core; resolves with its port once it prints READY. The server's
 * stdout (its request log) goes to a file, as in production, so no reader process competes for CPU.
 */
/**
 * `BENCH_PROF=<dir>`: the server writes a CPU profile (markdown) there when it stops. `BENCH_GC=1`: the
 * engine logs each garbage collection (JavaScriptCore's `logGC`) to a file beside the request log, and
 * `gcSince` reads the pauses logged after a mark (`gcMark`).
 */
export async function startPinned(script: string, core: number, env: Record<string, string> = {}) {
  const logFile = join(mkdtempSync(join(tmpdir(), 'tcs-bench-')), 'stdout.log')
  const gcFile = process.env.BENCH_GC === '1' ? join(dirname(logFile), 'gc.log') : null
  const proc = spawn(
    [
      'taskset',
      '-c',
      String(core),
      'bun',
      ...(process.env.BENCH_PROF ? ['--cpu-prof-md', `--cpu-prof-dir=${process.env.BENCH_PROF}`] : []),
      script,
    ],
    {
      stdout: Bun.file(logFile),
      stderr: gcFile ? Bun.file(gcFile) : 'inherit',
      env: { ...process.env, ...(gcFile ? { BUN_JSC_logGC: '1' } : {}), ...env },
    },
  )
  const deadline = Date.now() + 60_000
  for (;;) {
    let text = ''
    try {
      text = readFileSync(logFile, 'utf8')
    } catch {}
    const m = /READY \S+:(\d+)/.exec(text)
    if (m) {
      // SIGTERM lets the server remove its own temp dir; SIGKILL if it has not gone in 10 s
      const stop = async () => {
        proc.kill('SIGTERM')
        const killer = setTimeout(() => proc.kill('SIGKILL'), 10_000)
        await proc.exited
        clearTimeout(killer)
        rmSync(dirname(logFile), { recursive: true, force: true })
      }
      const gcText = () => (gcFile ? readFileSync(gcFile, 'utf8') : '')
      return {
        port: Number(m[1]),
        logFile,
        stop,
        /** Where the GC log is now (BENCH_GC=1), for `gcSince`. */
        gcMark: () => gcText().length,
        /** Pauses of the young (eden) collections logged since `mark`; null without BENCH_GC=1. */
        gcSince: (mark: number) => (gcFile ? edenPauses(gcText().slice(mark)) : null),
      }
    }
    if (proc.exitCode !== null) throw new Error(`${script} exited with ${proc.exitCode}`)
    if (Date.now() > deadline) {
      proc.kill('SIGKILL')
      rmSync(dirname(logFile), { recursive: true, force: true })
      throw new Error(`${script} did not start`)
    }
    await Bun.sleep(50)
  }
}

/**
 * Stop-the-world time of each young collection of the main thread in a JavaScriptCore `logGC` log: a
 * collection's record runs from `[GC<heap>: START` to `END]` and lists each pause as `p=<ms>ms`. Worker
 * threads (the checkpointer) have heaps of their own; the main thread's is the largest.
 */
export function edenPauses(log: string) {
  const byHeap = new Map<string, { largest: number; pauses: number[] }>()
  for (const m of log.matchAll(/GC<(\w+)>: START \w (\d+)kb => (\w+)Collection([\s\S]*?)END\]/g)) {
    const heap = byHeap.get(m[1]) ?? { largest: 0, pauses: [] }
    byHeap.set(m[1], heap)
    heap.largest = Math.max(heap.largest, Number(m[2]))
    if (m[3] === 'Eden')
      heap.pauses.push([...m[4].matchAll(/p=([\d.]+)ms/g)].reduce((a, p) => a + Number(p[1]), 0))
  }
  const main = [...byHeap.values()].sort((a, b) => b.largest - a.largest)[0]
  const pauses = (main?.pauses ?? []).sort((a, b) => a - b)
  const at = (q: number) => pauses[Math.min(pauses.length - 1, Math.floor(q * pauses.length))] ?? 0
  return {
    count: pauses.length,
    p50: at(0.5),
    p90: at(0.9),
    max: pauses.at(-1) ?? 0,
    total: pauses.reduce((a, p) => a + p, 0),
  }
}

/** Runs wrk pinned to another core against loopback; returns requests/second and latency percentiles. */
export async function wrk(
  url: string,
  opts: {
    core: number
    seconds: number
    connections: number
    headers?: Record<string, string>
    script?: string
  },
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
  if (opts.script) args.push('-s', opts.script)
  args.push(url)
  const proc = spawn(args, { stdout: 'pipe', stderr: 'pipe' })
  const out = await new Response(proc.stdout).text()
  await proc.exited
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? 0)
  const non2xx = Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(out)?.[1] ?? 0)
  const pct = (p: number) => new RegExp(`${p}%\\s+([\\d.]+\\w+)`).exec(out)?.[1] ?? '?'
  const p99 = pct(99)
  return { rps, non2xx, p50: pct(50), p90: pct(90), p99, p99ms: toMs(p99), raw: out }
}

function toMs(v: string): number {
  const m = /^([\d.]+)(us|ms|s)$/.exec(v)
  if (!m) return Number.NaN
  const n = Number(m[1])
  return m[2] === 'us' ? n / 1000 : m[2] === 's' ? n * 1000 : n
}

/**
 * CPU time stolen from this VM by its host, in percent of the window, from /proc/stat: runs on a
 * contended host are slower for reasons outside the code, and say so next to their figures.
 */
export function stealMeter() {
  const read = () => {
    const f = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number)
    return { steal: f[7] ?? 0, total: f.slice(0, 8).reduce((a, b) => a + b, 0) }
  }
  const start = read()
  return () => {
    const end = read()
    const total = end.total - start.total
    return total > 0 ? (100 * (end.steal - start.steal)) / total : 0
  }
}

/**
 * A wrk script posting trade opens (0.01 lot BTCUSD) as `token` for the given logins in turn; returns its
 * path.
 */
export function openScript(logins: number[], tokens: string[]) {
  const script = join(mkdtempSync(join(tmpdir(), 'tcs-bench-')), 'open.lua')
  writeFileSync(
    script,
    `local logins = {${logins.join(',')}}
local tokens = {${tokens.map((t) => JSON.stringify(t)).join(',')}}
local i = 0
wrk.method = "POST"
request = function()
  i = i + 1
  local k = (i % #logins) + 1
  local body = '{"login":' .. logins[k] .. ',"cmd":0,"volume":1,"symbol":"BTCUSD","sl":0,"tp":0}'
  return wrk.format(nil, nil, { ["content-type"] = "application/json", ["authorization"] = tokens[k] }, body)
end
`,
  )
  return script
}

/**
 * The session tokens of accounts, each signed in with its own password: trade opens are sent as the
 * customer's own (a staff session's change is written to the audit trail first, kernel/audit).
 */
export async function accountTokens(base: string, logins: number[], password: string) {
  const tokens: string[] = []
  for (const login of logins) {
    const r = await fetch(`${base}/sign/in`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ login, password }),
    })
    if (r.status !== 200) throw new Error(`sign-in of ${login} answered ${r.status}: ${await r.text()}`)
    tokens.push(((await r.json()) as { __token: string }).__token)
  }
  return tokens
}
