// One job runner in a process of its own, for the tests of cluster jobs (tests/integration/jobs.test.ts):
// the job `test.tick` (cluster, every EVERY ms) pushes "<owner> <epoch ms>" to the Redis list `runs`.
// Leases in Redis (LEASES=redis) or in the database at DB_URL (LEASES=db). Prints READY; runs until killed.
import { RedisClient } from 'bun'
import { z } from 'zod'
import { RedisStore } from '../../src/kernel/cache/redis'
import { systemClock } from '../../src/kernel/clock'
import { openDatabase } from '../../src/kernel/db/client'
import { DbLeases, type Leases, StoreLeases } from '../../src/kernel/jobs/leases'
import { JobRunner } from '../../src/kernel/jobs/runner'
import { silentLogger } from '../../src/kernel/logger'

const env = z
  .object({
    OWNER: z.string(),
    REDIS_URL: z.string(),
    LEASES: z.enum(['redis', 'db']),
    DB_URL: z.string().optional(),
    EVERY: z.coerce.number().int().positive(),
  })
  .parse(process.env)

const observe = new RedisClient(env.REDIS_URL)
const leases: Leases =
  env.LEASES === 'redis'
    ? new StoreLeases(new RedisStore(env.REDIS_URL))
    : new DbLeases((await openDatabase(env.DB_URL as string)).db, systemClock)

const runner = new JobRunner(
  [
    {
      name: 'test.tick',
      every: env.EVERY,
      scope: 'cluster',
      run: () => observe.send('RPUSH', ['runs', `${env.OWNER} ${Date.now()}`]),
    },
  ],
  leases,
  env.OWNER,
  systemClock,
  silentLogger,
)
runner.start()
console.log('READY')
