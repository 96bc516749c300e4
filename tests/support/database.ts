import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openDatabase } from '../../src/kernel/db/client'

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

/** The innermost message of a failure, or 'no failure' (drizzle wraps the driver's error as its cause). */
export async function failure(p: Promise<unknown>): Promise<string> {
  try {
    await p
  } catch (e) {
    let root = e
    while (root instanceof Error && root.cause instanceof Error) root = root.cause
    return root instanceof Error ? root.message : String(root)
  }
  return 'no failure'
}
