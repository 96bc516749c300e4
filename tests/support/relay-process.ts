// One relay in a process of its own, for the tests of exactly-once delivery across processes
// (tests/integration/events-processes.test.ts). It counts itself in the Redis key `ready`, waits for
// the key `go` (so the relays start together), delivers `test.ping` events to two consumers until none
// is undelivered, and prints DONE.
// Consumers:
// - test.db-write writes a row in the delivery's transaction (exactly once by the delivery record);
// - test.external also does something outside the database (Redis), keyed by the event id, so a
//   redelivery after a crash changes nothing; with CRASH_AT=<event id> the process kills itself right
//   after that outside effect, before its transaction commits.
import { RedisClient } from 'bun'
import { z } from 'zod'
import { systemClock } from '../../src/kernel/clock'
import { openDatabase } from '../../src/kernel/db/client'
import { Events } from '../../src/kernel/events/events'
import { Relay } from '../../src/kernel/events/relay'
import { type Consumer, defineTopic } from '../../src/kernel/events/topic'
import { silentLogger } from '../../src/kernel/logger'

export const Ping = defineTopic('test.ping', z.object({ n: z.number().int() }))

const env = z
  .object({
    DB_URL: z.string(),
    REDIS_URL: z.string(),
    OWNER: z.string(),
    CRASH_AT: z.coerce.number().int().optional(),
    LEASE_MS: z.coerce.number().int().default(2000),
  })
  .parse(process.env)

const redis = new RedisClient(env.REDIS_URL)
const { db, close } = await openDatabase(env.DB_URL)

const record =
  (consumer: string) =>
  async (e: { id: number }, tx: Parameters<NonNullable<Consumer<unknown>['handle']>>[1]) => {
    await tx.execute({
      sql: 'insert into relay_effects (event_id, consumer, owner) values (?, ?, ?)',
      args: [e.id, consumer, env.OWNER],
    })
  }

const consumers: Consumer<{ n: number }>[] = [
  { name: 'test.db-write', topic: Ping, handle: record('test.db-write') },
  {
    name: 'test.external',
    topic: Ping,
    async handle(e, tx) {
      await redis.send('RPUSH', ['attempts', String(e.id)])
      // the outside effect, once per event id whatever happens to this transaction
      if ((await redis.send('SET', [`effect:${e.id}`, env.OWNER, 'NX'])) === 'OK') await redis.incr('effects')
      if (e.id === env.CRASH_AT) process.kill(process.pid, 'SIGKILL')
      await record('test.external')(e, tx)
    },
  },
]
const events = new Events()
events.register(consumers as Consumer<unknown>[])
const relay = new Relay(db, events, systemClock, silentLogger, {
  owner: env.OWNER,
  batch: 20,
  leaseMs: env.LEASE_MS,
})

await redis.incr('ready')
while ((await redis.get('go')) !== '1') await Bun.sleep(2)
const deadline = Date.now() + 60_000
for (;;) {
  // one batch per turn, as a relay polls in production: the other process's claims interleave with ours
  while ((await relay.pass()) > 0) await Bun.sleep(1)
  const left = await db.execute('select count(*) as n from outbox where dispatched_at is null')
  if (Number(left.rows[0].n) === 0) break
  if (Date.now() > deadline) throw new Error(`${left.rows[0].n} events still undelivered`)
  await Bun.sleep(20)
}
console.log(`DONE ${JSON.stringify(relay.stats)}`)
redis.close()
close()
process.exit(0)
