import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openDatabase } from '../../src/kernel/db/client'
import { rootMessage } from '../../src/kernel/db/errors'

/** A fresh libSQL file in a temp dir, opened as the app opens it; `close` also removes the dir. */
export async function tempDatabase(name: string, opts: Parameters<typeof openDatabase>[2] = {}) {
  const dir = mkdtempSync(join(tmpdir(), `tcs-${name}-`))
  const file = join(dir, `${name}.db`)
  const database = await openDatabase(`file:${file}`, undefined, opts)
  return {
    ...database,
    /** The libSQL client beneath (the local adapter's for a file). */
    client: database.db.client,
    file,
    close() {
      database.close()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

/** The innermost message of a failure (kernel/db/errors `rootMessage`), or 'no failure'. */
export async function failure(p: Promise<unknown>): Promise<string> {
  try {
    await p
  } catch (e) {
    return rootMessage(e)
  }
  return 'no failure'
}
