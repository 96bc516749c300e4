// Starts the real service for browser tests: fresh libSQL file, demo data, a free port (printed as READY <url>).
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { loadConfig } from '../../src/config'
import { startServer } from '../../src/entry/server'

const dir = mkdtempSync(join(tmpdir(), 'tcs-e2e-'))
const server = await startServer(
  loadConfig({
    APP_ENV: 'test',
    HOST: '127.0.0.1',
    PORT: '0',
    DATABASE_URL: `file:${join(dir, 'e2e.db')}`,
    UPLOAD_DIR: join(dir, 'uploads'),
    LOG_LEVEL: 'warn',
  }),
)
console.log(`READY http://127.0.0.1:${server.port}`)
