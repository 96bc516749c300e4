import { closeSync, openSync, readFileSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { freePort } from './ports'

const ROOT = resolve(import.meta.dir, '../..')

export interface Prism {
  url: string
  /** The tail of what Prism printed (its log of each request, and why it stopped if it did). */
  output: () => string
  stop: () => Promise<void>
}

/**
 * A Prism validating proxy (`prism proxy --errors`) in front of `upstream`, checking every request and
 * answer against `doc` (written to `dir`): a violation answers 500 with an `sl-violations` header.
 */
export async function startPrism(doc: unknown, upstream: string, dir: string): Promise<Prism> {
  const file = join(dir, `openapi-${crypto.randomUUID()}.json`)
  writeFileSync(file, JSON.stringify(doc))
  // a free port can be taken by another suite's server before Prism binds it: Prism then exits, and
  // whatever holds the port would answer in its place. Prism is up when it says it listens on its port.
  for (let attempt = 1; ; attempt++) {
    const prism = await tryStart(file, upstream, dir)
    if (prism) return prism
    if (attempt === 3) throw new Error('Prism did not start on three free ports')
  }
}

async function tryStart(file: string, upstream: string, dir: string): Promise<Prism | undefined> {
  const port = await freePort()
  // to a file, never an unread pipe: Prism logs every request
  const log = join(dir, `prism-${port}.log`)
  const out = openSync(log, 'w')
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
    { stdout: out, stderr: out },
  )
  // the child has its own copy of the descriptor
  closeSync(out)
  const url = `http://127.0.0.1:${port}`
  const output = () =>
    `${readFileSync(log, 'utf8').slice(-4000)}${proc.exitCode === null ? '' : `\n[prism exited ${proc.exitCode}]`}`
  const until = Date.now() + 30_000
  while (!readFileSync(log, 'utf8').includes(`Prism is listening on ${url}`)) {
    if (proc.exitCode !== null) {
      console.log(`[prism] did not start on port ${port}:\n${output()}`)
      return undefined
    }
    if (Date.now() > until) {
      proc.kill()
      throw new Error(`Prism did not start:\n${output()}`)
    }
    await Bun.sleep(100)
  }
  return {
    url,
    output,
    stop: async () => {
      proc.kill()
      await proc.exited
    },
  }
}
