// What an operator meets first: the Bun entry (src/main/bun.ts) started with settings it cannot run with
// exits non-zero with one line naming the setting and the reason, and reports every invalid setting at
// once. Real processes, real files, a real closed port.
import { describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const ENTRY = join(import.meta.dir, '../../src/main/bun.ts')

async function closedPort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const port = (server.address() as { port: number }).port
  await new Promise<void>((r) => server.close(() => r()))
  return port
}

async function start(env: Record<string, string>) {
  const dir = mkdtempSync(join(tmpdir(), 'tcs-startup-'))
  const proc = Bun.spawn([process.execPath, ENTRY], {
    cwd: dir,
    env: {
      PATH: process.env.PATH ?? '',
      HOST: '127.0.0.1',
      PORT: '0',
      LOG_LEVEL: 'error',
      UPLOAD_DIR: join(dir, 'uploads'),
      SEED_DEMO: '0',
      QUOTE_SIMULATOR: '0',
      ...env,
    },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const timer = setTimeout(() => proc.kill('SIGKILL'), 30_000)
  const [code, stdout, stderr] = await Promise.all([
    proc.exited,
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
  ])
  clearTimeout(timer)
  rmSync(dir, { recursive: true, force: true })
  return { code, output: `${stderr}${stdout}`.trim() }
}

describe('startup with settings it cannot run with', () => {
  test('a scheme libSQL does not speak: exit 1 naming DATABASE_URL', async () => {
    const { code, output } = await start({ DATABASE_URL: 'postgres://u:p@127.0.0.1/db' })
    expect(code).toBe(1)
    expect(output).toContain('DATABASE_URL')
    expect(output).not.toContain('uncaught')
  }, 40_000)

  test('an unreachable sqld: exit 1, one line naming DATABASE_URL and the reason, no credentials', async () => {
    const port = await closedPort()
    const { code, output } = await start({
      DATABASE_URL: `http://127.0.0.1:${port}`,
      DATABASE_AUTH_TOKEN: 'secret-token-value',
    })
    expect(code).toBe(1)
    expect(output.split('\n')).toHaveLength(1)
    expect(output).toStartWith(`DATABASE_URL (http://127.0.0.1:${port}):`)
    expect(output).not.toContain('secret-token-value')
  }, 40_000)

  test('a directory that does not exist is refused, not created', async () => {
    const missing = join(tmpdir(), `tcs-missing-${process.pid}-${Date.now()}`, 'nested')
    const { code, output } = await start({ DATABASE_URL: `file:${join(missing, 'app.db')}` })
    expect(code).toBe(1)
    expect(output).toStartWith('DATABASE_URL (')
    expect(output).toContain('does not exist')
    expect(await Bun.file(missing).exists()).toBe(false)
  }, 40_000)

  test('a file that is not a database: exit 1 naming DATABASE_URL', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tcs-notdb-'))
    const path = join(dir, 'app.db')
    writeFileSync(path, 'this is not a database file, it is plain text '.repeat(100))
    try {
      const { code, output } = await start({ DATABASE_URL: `file:${path}` })
      expect(code).toBe(1)
      expect(output).toStartWith('DATABASE_URL (')
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }, 40_000)

  test("production reports every invalid setting in one start, the kernel's and the modules'", async () => {
    const { code, output } = await start({
      APP_ENV: 'production',
      DATABASE_URL: 'file:app.db',
      PORT: 'not-a-port',
      ACCOUNT_OPEN_MAX_PER_DAY: '0',
    })
    expect(code).toBe(1)
    expect(output).toContain('PORT')
    expect(output).toContain('JWT_SECRET')
    expect(output).toContain('ACCOUNT_OPEN_MAX_PER_DAY')
  }, 40_000)

  test("a module's invalid setting alone: exit 1 naming it, no stack", async () => {
    const { code, output } = await start({ ATTRIBUTION_WINDOW_DAYS: '0' })
    expect(code).toBe(1)
    expect(output).toStartWith('Invalid configuration:\n  ATTRIBUTION_WINDOW_DAYS:')
    expect(output).not.toContain(' at ')
  }, 40_000)
})
