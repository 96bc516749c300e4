// Applies drizzle/ migrations to DATABASE_URL (a libSQL file or a remote sqld/Turso).
import { loadConfig } from '../src/kernel/config'
import { openDatabase } from '../src/kernel/db/client'
import { migrateDatabase } from '../src/kernel/db/migrate'

const config = loadConfig()
const database = await openDatabase(config.database.url, config.database.authToken)
await migrateDatabase(database.db)
database.close()
console.log(`migrated ${config.database.url.replace(/\/\/[^@]*@/, '//***@')}`)
