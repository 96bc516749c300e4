import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export interface RealServer {
  url: string
  pid: number
  /** Everything the process wrote to stdout and stderr so far (JSON log lines). */
  output(): string
  /** Waits (up to 5 s) until the output matches; log lines are written in batches every few ms. */
  waitForOutput(pattern: RegExp): Promise<string>
  stop(): Promise<void>
  /** Kills it without a graceful stop (a crash). */
  kill(): Promise<void>
  /** The process has not exited. */
  alive(): boolean
  /** Sends a signal without waiting (a test of the graceful shutdown). */
  signal(name: 'SIGTERM' | 'SIGINT'): void
  /** Resolves with the exit code once the process has exited (null when a signal ended it). */
  exited: Promise<number | null>
}

/** Everything a child process writes to stdout and stderr, as it comes. */
export function collectOutput(proc: {
  stdout: ReadableStream<Uint8Array>
  stderr: ReadableStream<Uint8Array>
}) {
  const sink = { text: '' }
  const pump = async (stream: ReadableStream<Uint8Array>) => {
    const dec = new TextDecoder()
    const reader = stream.getReader()
    for (;;) {
      const { done, value } = await reader.read()
      if (done) return
      sink.text += dec.decode(value)
    }
  }
  void pump(proc.stdout)
  void pump(proc.stderr)
  return sink
}

/** A directory for a real server's database and uploads; `remove` deletes it. */
export function serverDir() {
  const dir = mkdtempSync(join(tmpdir(), 'tcs-real-'))
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) }
}

/**
 * Starts the service as its own process (tests/support/serve.ts) on a free loopback port, on the database
 * in `dir` (seeded on first start), and waits for READY. Stopped by its process id.
 */
export async function startRealServer(dir: string, env: Record<string, string> = {}): Promise<RealServer> {
  const proc = Bun.spawn(['bun', 'tests/support/serve.ts'], {
    env: {
      ...process.env,
      APP_ENV: 'test',
      DATABASE_URL: `file:${join(dir, 'app.db')}`,
      UPLOAD_DIR: join(dir, 'uploads'),
      SEED_HISTORY: '0',
      QUOTE_SIMULATOR: '0',
      DEMO_WEEKEND_TRADING: '1',
      LOG_LEVEL: 'info',
      ...env,
    },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const output = collectOutput(proc)
  const until = Date.now() + 30_000
  let url: string | undefined
  while (!url) {
    const m = /READY (\S+)/.exec(output.text)
    if (m) url = m[1]
    else if (proc.exitCode !== null) throw new Error(`server exited with ${proc.exitCode}:\n${output.text}`)
    else if (Date.now() > until) {
      proc.kill('SIGKILL')
      throw new Error(`server did not start:\n${output.text}`)
    } else await Bun.sleep(25)
  }
  const gone = async (signal: 'SIGTERM' | 'SIGKILL') => {
    if (proc.exitCode !== null || proc.signalCode !== null) return
    proc.kill(signal)
    const timer = setTimeout(() => proc.kill('SIGKILL'), 10_000)
    await proc.exited
    clearTimeout(timer)
  }
  return {
    url,
    pid: proc.pid,
    output: () => output.text,
    async waitForOutput(pattern) {
      const end = Date.now() + 5000
      while (!pattern.test(output.text) && Date.now() < end) await Bun.sleep(20)
      return output.text
    },
    stop: () => gone('SIGTERM'),
    kill: () => gone('SIGKILL'),
    alive: () => proc.exitCode === null && proc.signalCode === null,
    signal: (name) => proc.kill(name),
    exited: proc.exited.then(() => proc.exitCode),
  }
}

/** fetch with a JSON body and the Host the demo brand is served on. */
export async function call(
  base: string,
  method: string,
  path: string,
  o: { body?: unknown; token?: string; headers?: Record<string, string>; raw?: BodyInit } = {},
) {
  const headers: Record<string, string> = { ...o.headers }
  if (o.token) headers.authorization = o.token
  let body: BodyInit | undefined = o.raw
  if (o.body !== undefined) {
    body = JSON.stringify(o.body)
    headers['content-type'] ??= 'application/json'
  }
  const res = await fetch(`${base}${path}`, { method, headers, body })
  const text = await res.text()
  let json: any
  try {
    json = text ? JSON.parse(text) : undefined
  } catch {}
  return { status: res.status, headers: res.headers, json, text }
}

/** Signs in over the socket and returns the token (a sign-in that fails throws with its answer). */
export async function signIn(base: string, path: string, body: unknown) {
  const r = await call(base, 'POST', path, { body })
  if (r.status !== 200) throw new Error(`${path}: ${r.status} ${r.text}`)
  return r.json.__token as string
}

/** The demo brand's affiliate host (the cabinet and its API are served there). */
export const DEMO_AFFILIATE_HOST = 'affiliates.localhost'

/**
 * A token of each demo user, by the security scheme or session type the document names: the account
 * (with `userPassword`, when a test changed it), the customer, the staff roles, the affiliate cabinet's
 * session cookie and a fresh integration token of the demo partner.
 */
export async function demoTokens(
  base: string,
  userPassword = 'demo-pass-1',
): Promise<Record<string, string>> {
  const sign = async (path: string, body: unknown) => (await call(base, 'POST', path, { body })).json?.__token
  const t: Record<string, string> = {}
  t.SESSION_USER = await sign('/sign/in', { login: 100001, password: userPassword })
  t.SESSION_CUSTOMER = await sign('/customer/sign/in', { email: 'demo@example.com', password: 'demo-pass-1' })
  t.SESSION_MANAGER = await sign('/manager/sign/in', { login: 1, password: 'manager-pass-1' })
  t.SESSION_ADMIN = await sign('/manager/sign/in', { login: 2, password: 'admin-pass-1' })
  t.SESSION_DEALER = await sign('/manager/sign/in', { login: 3, password: 'dealer-pass-1' })
  const cabinet = await call(base, 'POST', '/api/affiliate/login', {
    body: { login: 'partner@example.com', password: 'partner-pass-1' },
    headers: { host: DEMO_AFFILIATE_HOST },
  })
  t.AffiliateSession = /tcs_aff=([^;]+)/.exec(cabinet.headers.get('set-cookie') ?? '')?.[1] ?? ''
  t.AffiliateToken = (
    await call(base, 'POST', '/manager/affiliates/1/tokens', {
      token: t.SESSION_MANAGER,
      body: { scopes: ['customers:read', 'transactions:read', 'commissions:read'], expires_in_days: 1 },
    })
  ).json?.token
  return t
}
