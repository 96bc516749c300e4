import { fileURLToPath } from 'node:url'
import { migrate } from 'drizzle-orm/libsql/migrator'
import type { Db } from './client'

export const MIGRATIONS_DIR = fileURLToPath(new URL('../../../drizzle', import.meta.url))

/**
 * Applies the drizzle-kit migrations in drizzle/ (idempotent; drizzle keeps its own journal table).
 * Instances booting at once on one sqld race for the first migration: the loser's CREATE fails on the
 * table the winner made; it reads the journal again and finds the work done.
 */
export async function migrateDatabase(db: Db, migrationsFolder = MIGRATIONS_DIR) {
  for (let attempt = 1; ; attempt++) {
    try {
      await migrate(db.orm(), { migrationsFolder })
      return
    } catch (e) {
      if (attempt >= 5) throw e
      await new Promise((r) => setTimeout(r, 100 * attempt + Math.floor(Math.random() * 100)))
    }
  }
}
