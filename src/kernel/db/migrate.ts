import { fileURLToPath } from 'node:url'
import { migrate } from 'drizzle-orm/libsql/migrator'
import type { Db } from './client'

export const MIGRATIONS_DIR = fileURLToPath(new URL('../../../drizzle', import.meta.url))

/** Applies the drizzle-kit migrations in drizzle/ (idempotent; drizzle keeps its own journal table). */
export async function migrateDatabase(db: Db, migrationsFolder = MIGRATIONS_DIR) {
  await migrate(db.orm(), { migrationsFolder })
}
