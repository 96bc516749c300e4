import { writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { freePort } from './ports'

const ROOT = resolve(import.meta.dir, '../..')

export interface Prism {
  url: string
  stop: () => Promise<void>
}

/**
 * A Prism validating proxy (`prism proxy --errors`) in front of `upstream`, checking every request and
 * answer against `doc` (written to `dir`): a violation answers 500 with an `sl-violations` header.
 */
export async function startPrism(doc: unknown, upstream: string, dir: string): Promise<Prism> {
  const file = join(dir, `openapi-${crypto.randomUUID()}.json`)
  writeFileSync(file, JSON.stringify(doc))
  const port = await freePort()
  const proc = Bun.spawn(
    [
      Bun.which('node') ?? process.execPath,
      join(ROOT, 'node_modules/@stoplight/prism-cli/dist/index.js'),
      'proxy',
      file,
      upstream,
      '--host',
      '127.0.0.1',
      '--port',
      String(port),
      '--errors',
    ],
    { stdout: 'pipe', stderr: 'pipe' },
  )
  const url = `http://127.0.0.1:${port}`
  for (let i = 0; ; i++) {
    try {
      await fetch(`${url}/health`)
      break
    } catch (e) {
      if (i > 300 || proc.exitCode !== null) {
        proc.kill()
        throw e
      }
      await Bun.sleep(100)
    }
  }
  return {
    url,
    stop: async () => {
      proc.kill()
      await proc.exited
    },
  }
}
