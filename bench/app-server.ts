// The real service on a fresh libSQL file with demo data, embedded defaults. Prints READY <port>.
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { loadConfig } from '../src/config'
import { startServer } from '../src/entry/server'

const dir = mkdtempSync(join(tmpdir(), 'tcs-bench-'))
const server = await startServer(
  loadConfig({
    APP_ENV: 'development',
    HOST: '127.0.0.1',
    PORT: '0',
    DATABASE_URL: `file:${join(dir, 'bench.db')}`,
    UPLOAD_DIR: join(dir, 'uploads'),
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'info',
  }),
  // request logs go to /dev/null-like sink only when LOG_LEVEL says so; default keeps them on (real cost)
)
console.log(`READY ${server.port}`)
