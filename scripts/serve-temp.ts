// Starts the real service on a fresh libSQL file in a temp dir, demo data seeded, on a free loopback port,
// and prints READY <url>. Used by the browser tests and the benchmarks. LOG_LEVEL, SEED_HISTORY and
// QUOTE_SIMULATOR are taken from the env. SIGINT or SIGTERM stops it and removes the temp dir (a bench run
// leaves a few hundred MB of database there).
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { loadConfig } from '../src/kernel/config'
import { startServer } from '../src/main/server'

const dir = mkdtempSync(join(tmpdir(), 'tcs-serve-'))
const server = await startServer(
  loadConfig({
    APP_ENV: 'development',
    HOST: '127.0.0.1',
    PORT: '0',
    // a bench may bring its own database file (bench/affiliate-api.ts fills one with a million rows)
    DATABASE_URL: process.env.SERVE_DATABASE_URL ?? `file:${join(dir, 'app.db')}`,
    UPLOAD_DIR: join(dir, 'uploads'),
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'info',
    // Profiling runs may turn off the candle backfill or the simulator.
    ...(process.env.SEED_HISTORY ? { SEED_HISTORY: process.env.SEED_HISTORY } : {}),
    ...(process.env.QUOTE_SIMULATOR ? { QUOTE_SIMULATOR: process.env.QUOTE_SIMULATOR } : {}),
    // the registration bench registers from one address
    ...(process.env.REGISTER_MAX_PER_HOUR
      ? { REGISTER_MAX_PER_HOUR: process.env.REGISTER_MAX_PER_HOUR }
      : {}),
    // the test command lets the demo's forex trade at weekends (scripts/test.sh)
    ...(process.env.DEMO_WEEKEND_TRADING ? { DEMO_WEEKEND_TRADING: process.env.DEMO_WEEKEND_TRADING } : {}),
    // the commissions bench closes its month itself
    ...(process.env.AFFILIATE_PERIOD_AUTO_CLOSE
      ? { AFFILIATE_PERIOD_AUTO_CLOSE: process.env.AFFILIATE_PERIOD_AUTO_CLOSE }
      : {}),
  }),
)
console.log(`READY http://127.0.0.1:${server.port}`)
// A graceful stop lets `bun --cpu-prof` write its profile.
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.on(signal, async () => {
    await server.stop()
    rmSync(dir, { recursive: true, force: true })
    process.exit(0)
  })
