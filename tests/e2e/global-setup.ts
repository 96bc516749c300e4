import { spawn } from 'node:child_process'

/** Spawns the Bun server (the test runner itself runs on Node) and stops it by its pid afterwards. */
export default async function globalSetup() {
  const child = spawn('bun', ['scripts/serve-temp.ts'], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, LOG_LEVEL: 'warn' },
  })
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('server did not start')), 30_000)
    let buf = ''
    child.stdout.on('data', (d: Buffer) => {
      buf += d.toString()
      const m = /READY (\S+)/.exec(buf)
      if (m) {
        clearTimeout(timer)
        resolve(m[1])
      }
    })
    child.once('exit', (code) => reject(new Error(`server exited with ${code}`)))
  })
  process.env.BASE_URL = url
  return async () => {
    child.kill('SIGTERM')
  }
}
