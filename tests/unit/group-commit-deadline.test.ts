// GroupCommit's deadline (src/kernel/db/group-commit.ts): a request waits at most `waitMs` for its
// transaction to start, wherever it waits, and is then answered DatabaseBusy (503) with nothing written;
// a request whose transaction has started is answered by that transaction's outcome only (ADR 0019).
// The writer is a fake whose turns and statements wait for the test (a paused sqld).
import { afterEach, expect, test } from 'bun:test'
import type { Db, Tx } from '../../src/kernel/db/client'
import { DatabaseBusy } from '../../src/kernel/db/errors'
import { GroupCommit } from '../../src/kernel/db/group-commit'
import { PastDeadline } from '../../src/kernel/db/group-writer'

const WAIT = 300

function gate() {
  let open!: () => void
  const opened = new Promise<void>((r) => {
    open = r
  })
  return { opened, open }
}

/**
 * A writer whose transactions get their turn only when `turns` opens (a lock another batch holds), and
 * whose handler's statements wait for `statements` (a database that does not answer). `written` holds the
 * inputs each handler call saw.
 */
function fakeWriter() {
  const turns = gate()
  const statements = gate()
  const written: number[][] = []
  const db = {
    async transaction<T>(fn: (tx: Tx) => Promise<T>) {
      await turns.opened
      return fn({} as Tx)
    },
  } as unknown as Db
  const gc = new GroupCommit<number, number>(
    db,
    async (_tx, inputs) => {
      written.push(inputs)
      await statements.opened
      return inputs.map((v) => v * 10)
    },
    { waitMs: WAIT },
  )
  return { gc, turns, statements, written }
}

/** When (ms after `t0`) each promise settled, and how. */
function timed<T>(t0: number, p: Promise<T>) {
  return p.then(
    (value) => ({ ok: true as const, value, ms: performance.now() - t0 }),
    (error: unknown) => ({ ok: false as const, error, ms: performance.now() - t0 }),
  )
}

const cleanups: (() => void)[] = []
afterEach(() => {
  for (const c of cleanups.splice(0)) c()
})

test('requests queued behind a batch whose database does not answer are answered 503 at their deadline', async () => {
  const w = fakeWriter()
  cleanups.push(w.turns.open, w.statements.open)
  w.turns.open()
  const t0 = performance.now()
  // the first request's transaction started: its statements hang (sqld paused)
  const first = timed(t0, w.gc.submit(1))
  await Bun.sleep(50)
  expect(w.written).toEqual([[1]])
  const queued = [timed(t0, w.gc.submit(2)), timed(t0, w.gc.submit(3))]
  const answers = await Promise.all(queued)
  for (const a of answers) {
    expect(a.ok).toBe(false)
    expect(a.ok ? null : a.error).toBeInstanceOf(DatabaseBusy)
    // the deadline counts from each request's arrival (50 ms in), not from the end of the batch ahead
    expect(a.ms).toBeGreaterThanOrEqual(50 + WAIT - 5)
    expect(a.ms).toBeLessThan(50 + WAIT + 150)
  }
  // the request already being written is not answered by the deadline: its batch may still commit
  await Bun.sleep(WAIT)
  w.statements.open()
  const f = await first
  expect(f.ok).toBe(true)
  expect(f.ok ? f.value : null).toBe(10)
  expect(f.ms).toBeGreaterThan(WAIT + 50)
  // and the requests answered 503 were never handed to a handler
  await Bun.sleep(20)
  expect(w.written).toEqual([[1]])
})

test('a batch waiting for its turn: its requests are answered 503 at their deadline and never written', async () => {
  const w = fakeWriter()
  cleanups.push(w.turns.open, w.statements.open)
  w.statements.open()
  const t0 = performance.now()
  const answers = [timed(t0, w.gc.submit(1)), timed(t0, w.gc.submit(2))]
  await Bun.sleep(WAIT / 2)
  const later = timed(t0, w.gc.submit(3))
  const early = await Promise.all(answers)
  for (const a of early) {
    expect(a.ok ? null : a.error).toBeInstanceOf(DatabaseBusy)
    expect(a.ms).toBeLessThan(WAIT + 150)
  }
  // the lock comes free before the later request's deadline: the batch runs without the expired ones,
  // and the later one (queued behind it) is written by the next batch
  w.turns.open()
  const l = await later
  expect(l.ok ? l.value : l.error).toBe(30)
  expect(w.written).toEqual([[3]])
})

test('one timer per committer, not one per request', async () => {
  const w = fakeWriter()
  cleanups.push(w.turns.open, w.statements.open)
  const original = globalThis.setTimeout
  let timers = 0
  globalThis.setTimeout = ((...args: Parameters<typeof setTimeout>) => {
    timers++
    return original(...args)
  }) as typeof setTimeout
  let pending: Promise<number>[]
  try {
    pending = Array.from({ length: 200 }, (_, i) => w.gc.submit(i))
  } finally {
    globalThis.setTimeout = original
  }
  expect(timers).toBeLessThanOrEqual(1)
  w.turns.open()
  w.statements.open()
  expect((await Promise.all(pending)).length).toBe(200)
})

test('a batch the database did not answer fails the requests queued behind it at once, nothing written', async () => {
  const busy = new DatabaseBusy('a round trip took over its bound')
  let fail!: () => void
  const failed = new Promise<void>((r) => {
    fail = r
  })
  const written: number[][] = []
  const db = {
    async transaction<T>(fn: (tx: Tx) => Promise<T>) {
      return fn({} as Tx)
    },
  } as unknown as Db
  const gc = new GroupCommit<number, number>(
    db,
    async (_tx, inputs) => {
      written.push(inputs)
      if (inputs.includes(1)) {
        await failed
        throw busy
      }
      return inputs.map((v) => v * 10)
    },
    { waitMs: 5000 },
  )
  const t0 = performance.now()
  const first = timed(t0, gc.submit(1))
  await Bun.sleep(20)
  const queued = [timed(t0, gc.submit(2)), timed(t0, gc.submit(3))]
  await Bun.sleep(100)
  fail()
  const answers = await Promise.all([first, ...queued])
  for (const a of answers) {
    expect(a.ok ? a.value : a.error).toBe(busy)
    expect(a.ms).toBeLessThan(500)
  }
  expect(written).toEqual([[1]])
  // a request after the failure is written as usual
  expect(await gc.submit(4)).toBe(40)
})

test("a batch cut at its oldest member's deadline (the database answering) leaves those queued behind it to be written", async () => {
  // a final read: only a database that did not answer refuses the queue; a deadline cut is one member's
  let calls = 0
  const db = {
    transaction: async (fn: (tx: Tx) => Promise<unknown>, order?: { deadline?: () => number }) => {
      if (typeof order?.deadline === 'function') order.deadline()
      return fn({} as Tx)
    },
  } as unknown as Db
  const gc = new GroupCommit<number, number>(
    db,
    async (_tx, inputs) => {
      calls++
      if (calls === 1) {
        await Bun.sleep(50)
        throw new PastDeadline(
          "the transaction's request reached its write timeout (DATABASE_WRITE_TIMEOUT_MS)",
        )
      }
      return inputs
    },
    { waitMs: 8000 },
  )
  const first = gc.submit(1).catch((e) => e)
  await Bun.sleep(10)
  // arrives while the first batch is being written
  const second = gc.submit(2).catch((e) => e)
  expect(await first).toBeInstanceOf(DatabaseBusy)
  expect(await second).toBe(2)
})
