import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createClient } from '@libsql/client'
import { drizzle } from 'drizzle-orm/libsql'
import { migrate } from 'drizzle-orm/libsql/migrator'
import { openDatabase } from '../../src/kernel/db/client'
import { rootMessage } from '../../src/kernel/db/errors'
import { MIGRATIONS_DIR } from '../../src/kernel/db/migrate'

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

/**
 * A libSQL file in `dir` migrated with the migrations before `tag` only, as a database made before that
 * migration was: `upgrade()` then applies all of them.
 */
export async function databaseBefore(dir: string, tag: string) {
  const before = join(dir, 'before')
  cpSync(MIGRATIONS_DIR, before, { recursive: true })
  const journal = JSON.parse(readFileSync(join(before, 'meta/_journal.json'), 'utf8'))
  journal.entries = journal.entries.filter((e: { tag: string }) => e.tag < tag)
  writeFileSync(join(before, 'meta/_journal.json'), JSON.stringify(journal))
  const client = createClient({ url: `file:${join(dir, 'app.db')}` })
  await migrate(drizzle(client), { migrationsFolder: before })
  return { client, upgrade: () => migrate(drizzle(client), { migrationsFolder: MIGRATIONS_DIR }) }
}
