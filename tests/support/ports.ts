import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/**
 * Ports handed to a process that binds them itself (sqld, redis-server, wrangler, Prism) come from below
 * the kernel's ephemeral range (32768–60999): there no `port: 0` listener and no outgoing connection can
 * take one between the choice and the bind. Each port is claimed by a file made exclusively, so two
 * suites running at once never choose the same one; a claim older than CLAIM_MS is free again (if bindable).
 */
const LOW = 20_000
const HIGH = 32_000
const CLAIMS = join(tmpdir(), 'tcs-port-claims')
const CLAIM_MS = 30 * 60_000

/** A free TCP port on 127.0.0.1, claimed for this run (see above). */
export async function freePort(): Promise<number> {
  mkdirSync(CLAIMS, { recursive: true })
  for (let i = 0; i < 500; i++) {
    const port = LOW + Math.floor(Math.random() * (HIGH - LOW))
    if (!claim(port)) continue
    if (await bindable(port)) return port
  }
  throw new Error(`no free port between ${LOW} and ${HIGH}`)
}

function claim(port: number): boolean {
  const file = join(CLAIMS, String(port))
  try {
    writeFileSync(file, String(process.pid), { flag: 'wx' })
    return true
  } catch {
    try {
      if (Date.now() - statSync(file).mtimeMs < CLAIM_MS) return false
      writeFileSync(file, String(process.pid))
      return true
    } catch {
      return false
    }
  }
}

function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer()
    srv.once('error', () => resolve(false))
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)))
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

/**
 * Stops a process (SIGSTOP), as a host or a network that stopped answering looks, and returns once the
 * kernel says it is stopped (`T` in /proc/<pid>/stat): a signal's delivery is not the stop itself.
 */
export async function pauseProcess(pid: number) {
  process.kill(pid, 'SIGSTOP')
  const state = () => readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /s, '')[0]
  await waitFor(async () => state() === 'T', 5_000, `process ${pid} stopped`)
}
