import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { RedisClient } from 'bun'
import { type Database, openDatabase } from '../../src/kernel/db/client'
import { migrateDatabase } from '../../src/kernel/db/migrate'
import { waitFor } from '../support/ports'
import { type RedisServer, startRedis } from '../support/redis'
import { type SqldServer, startSqld } from '../support/sqld'

// Exactly-once delivery with relays in processes of their own (tests/support/relay-process.ts), on a
// local file and on a real sqld: concurrent relays, and a relay killed between an outside effect and
// the record of its delivery.

let redis: RedisServer
let r: RedisClient
let sqld: SqldServer
const dirs: string[] = []

beforeAll(async () => {
  ;[redis, sqld] = await Promise.all([startRedis(), startSqld()])
  r = new RedisClient(redis.url)
})
afterAll(async () => {
  r.close()
  await Promise.all([redis.stop(), sqld.stop()])
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

type Backend = { name: string; open(): Promise<{ url: string; database: Database }> }
let sqldDatabases = 0
const backends: Backend[] = [
  {
    name: 'local file',
    async open() {
      const dir = mkdtempSync(join(tmpdir(), 'tcs-relay-'))
      dirs.push(dir)
      const url = `file:${join(dir, 'relay.db')}`
      return { url, database: await openDatabase(url) }
    },
  },
  {
    name: 'sqld',
    async open() {
      // one sqld, a fresh set of tables per test (sqld serves one database without namespaces)
      const database = await openDatabase(sqld.url)
      if (sqldDatabases++ > 0)
        for (const table of ['relay_effects', 'event_deliveries', 'dead_letters', 'outbox'])
          await database.db.execute(`delete from ${table}`)
      return { url: sqld.url, database }
    },
  },
]

async function prepare(backend: Backend, events: number) {
  const { url, database } = await backend.open()
  await migrateDatabase(database.db)
  await database.db.execute(
    'create table if not exists relay_effects (event_id integer not null, consumer text not null, owner text not null)',
  )
  const now = Date.now()
  for (let i = 0; i < events; i += 200) {
    const n = Math.min(200, events - i)
    await database.db.execute({
      sql: `insert into outbox (brand_id, topic, payload, created_at)
            select 1, 'test.ping', json_object('n', value), ? from json_each(?)`,
      args: [now, JSON.stringify(Array.from({ length: n }, (_, k) => i + k))],
    })
  }
  const ids = (await database.db.execute('select id from outbox order by id')).rows.map((x) => Number(x.id))
  await r.send('FLUSHDB', [])
  return { url, database, ids }
}

function relayProcess(url: string, owner: string, extra: Record<string, string> = {}) {
  const proc = Bun.spawn(['bun', 'tests/support/relay-process.ts'], {
    env: { ...process.env, DB_URL: url, REDIS_URL: redis.url, OWNER: owner, ...extra },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  return {
    proc,
    async finished() {
      const [code, out, err] = await Promise.all([
        proc.exited,
        new Response(proc.stdout).text(),
        new Response(proc.stderr).text(),
      ])
      return { code, signal: proc.signalCode, out, err }
    },
  }
}

async function count(database: Database, sql: string, args: (string | number)[] = []) {
  return Number((await database.db.execute({ sql, args })).rows[0].n)
}

/** Each consumer's database write happened exactly once for every event. */
async function expectEachOnce(database: Database, events: number) {
  const duplicates = await count(
    database,
    `select count(*) as n from (select event_id, consumer from relay_effects
                                group by event_id, consumer having count(*) > 1)`,
  )
  expect(duplicates).toBe(0)
  expect(await count(database, 'select count(*) as n from relay_effects')).toBe(2 * events)
}

for (const backend of backends)
  describe(`relay across processes: ${backend.name}`, () => {
    test('two relays at once: every consumer has every event exactly once, and both relays took part', async () => {
      const { url, database, ids } = await prepare(backend, 1000)
      try {
        const a = relayProcess(url, 'relay-a', { LEASE_MS: '20000' })
        const b = relayProcess(url, 'relay-b', { LEASE_MS: '20000' })
        await waitFor(async () => Number(await r.get('ready')) === 2, 30_000, 'both relays ready')
        await r.set('go', '1')
        const [ra, rb] = await Promise.all([a.finished(), b.finished()])
        expect([ra.code, rb.code, ra.err + rb.err]).toEqual([0, 0, ''])
        expect(ra.out + rb.out).toContain('DONE')
        await expectEachOnce(database, ids.length)
        expect(
          await count(database, 'select count(*) as n from event_deliveries where status = ?', ['delivered']),
        ).toBe(2 * ids.length)
        expect(await count(database, 'select count(*) as n from outbox where dispatched_at is null')).toBe(0)
        // the claims never overlapped: each event was handed to the consumer once, its effect done once
        expect(Number(await r.send('LLEN', ['attempts']))).toBe(ids.length)
        expect(Number(await r.get('effects'))).toBe(ids.length)
        const byOwner = (
          await database.db.execute('select owner, count(*) as n from relay_effects group by owner')
        ).rows as unknown as { owner: string; n: number }[]
        expect(byOwner.map((o) => o.owner).sort()).toEqual(['relay-a', 'relay-b'])
      } finally {
        database.close()
      }
    }, 90_000)

    test('a relay killed between an outside effect and its record: the next one delivers, nothing twice', async () => {
      const { url, database, ids } = await prepare(backend, 50)
      try {
        const victim = ids[9]
        const crashing = relayProcess(url, 'relay-crash', { CRASH_AT: String(victim) })
        await r.set('go', '1')
        const crashed = await crashing.finished()
        expect(crashed.signal).toBe('SIGKILL')
        // what it had delivered stays delivered; the event it died on has no record for that consumer
        expect(
          await count(
            database,
            'select count(*) as n from relay_effects where event_id = ? and consumer = ?',
            [victim, 'test.external'],
          ),
        ).toBe(0)
        expect(await r.get(`effect:${victim}`)).toBe('relay-crash')

        const next = relayProcess(url, 'relay-next', { LEASE_MS: '2000' })
        const done = await next.finished()
        expect([done.code, done.err]).toEqual([0, ''])
        // the crashed relay's lease ran out and the event went to the next one: the consumer saw it twice ...
        const attempts = (await r.send('LRANGE', ['attempts', '0', '-1'])) as string[]
        expect(attempts.filter((x) => x === String(victim))).toHaveLength(2)
        // ... and, keyed by the event id, did its outside effect once; its database write happened once
        expect(Number(await r.get('effects'))).toBe(ids.length)
        expect(await r.get(`effect:${victim}`)).toBe('relay-crash')
        await expectEachOnce(database, ids.length)
        // test.external's record is the next relay's (the crashed one's was rolled back with its
        // transaction, which took test.db-write's delivery of the same pass with it: each once, either way)
        expect(
          await count(
            database,
            'select count(*) as n from relay_effects where event_id = ? and consumer = ? and owner = ?',
            [victim, 'test.external', 'relay-next'],
          ),
        ).toBe(1)
      } finally {
        database.close()
      }
    }, 90_000)
  })
