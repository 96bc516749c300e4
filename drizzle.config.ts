import { defineConfig } from 'drizzle-kit'

// every table: the kernel's and each module's own schema.ts (no central file names the modules)
export default defineConfig({
  dialect: 'turso',
  schema: ['./src/kernel/**/schema.ts', './src/modules/*/schema.ts'],
  out: './drizzle',
  dbCredentials: { url: process.env.DATABASE_URL ?? 'file:data/app.db' },
})
