import { afterAll, expect, test } from 'bun:test'
import { readFileSync, statSync } from 'node:fs'
import { keepWalResident } from '../../src/kernel/db/local/wal-residency'
import { tempDatabase } from '../support/database'

// Locking a libSQL file's WAL and wal-index in memory (src/kernel/db/wal-residency.ts), measured by
// the kernel's own count of this process's locked memory.
const lockedKb = () => Number(/VmLck:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'))?.[1])
const pages = (bytes: number) => Math.ceil(bytes / 4096) * 4096

const database = await tempDatabase('wal-resident')
afterAll(() => database.close())

/** Grows the WAL by about `mb` MiB in transactions of 200 KB. */
async function write(db: typeof database, mb: number) {
  for (let i = 0; i < mb * 5; i++)
    await db.client.execute({
      sql: 'insert into t (v) select ? from generate_series(1, 50)',
      args: ['x'.repeat(4000)],
    })
}

test('locks the pages of the WAL and the -shm as the WAL grows, and unlocks them on close', async () => {
  await database.client.execute('create table t (v text not null)')
  await write(database, 2)
  const resident = await keepWalResident(database.file, 16 * 1024 * 1024)
  if (!resident) throw new Error('no mlock on this Linux machine')
  const before = lockedKb()
  const first = resident.tick()
  const expected = () =>
    pages(statSync(`${database.file}-wal`).size) + pages(statSync(`${database.file}-shm`).size)
  expect(first).toEqual({ lockedBytes: expected() })
  expect(lockedKb() - before).toBe(expected() / 1024)

  await write(database, 4)
  const second = resident.tick()
  expect(second).toEqual({ lockedBytes: expected() })
  if (!('lockedBytes' in first) || !('lockedBytes' in second)) throw new Error('unreachable')
  expect(second.lockedBytes - first.lockedBytes).toBeGreaterThan(3.5 * 1024 * 1024)
  expect(lockedKb() - before).toBe(expected() / 1024)

  resident.close()
  expect(lockedKb()).toBe(before)
})

test('stops at walBytes: a WAL longer than that is only partly locked', async () => {
  const resident = await keepWalResident(database.file, 1024 * 1024)
  if (!resident) throw new Error('no mlock on this Linux machine')
  expect(statSync(`${database.file}-wal`).size).toBeGreaterThan(4 * 1024 * 1024)
  const r = resident.tick()
  expect(r).toEqual({ lockedBytes: 1024 * 1024 + pages(statSync(`${database.file}-shm`).size) })
  resident.close()
})

test('the checkpoint worker of a database opened with residentWal locks its WAL, and unlocks it on close', async () => {
  const before = lockedKb()
  const resident = await tempDatabase('wal-resident-worker', { residentWal: true })
  try {
    await resident.client.execute('create table t (v text not null)')
    await write(resident, 2)
    const deadline = Date.now() + 5_000
    while (lockedKb() - before < 2 * 1024 && Date.now() < deadline) await Bun.sleep(20)
    // the worker is a thread of this process: its locks count here
    expect(lockedKb() - before).toBeGreaterThanOrEqual(2 * 1024)
  } finally {
    resident.close()
  }
  const deadline = Date.now() + 2_000
  while (lockedKb() > before && Date.now() < deadline) await Bun.sleep(20)
  expect(lockedKb()).toBe(before)
})
