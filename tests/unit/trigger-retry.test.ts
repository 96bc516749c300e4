// The trigger engine's executions the database did not take (trading/engine/trigger-engine.ts,
// retryLater): written again until they commit, the cursor held meanwhile; one the database refuses is
// left after a bounded number of tries, so it never wedges the engine.
import { describe, expect, test } from 'bun:test'
import { compareIds } from '../../src/kernel/bus/bus'
import type { KeyValueStore } from '../../src/kernel/cache'
import { ResilientStore } from '../../src/kernel/cache/resilient'
import { DatabaseBusy } from '../../src/kernel/db/errors'
import { CursorHeld, EngineRole, REPLAY_MAX_MS } from '../../src/kernel/engine/role'
import type { OrderRow } from '../../src/modules/trading/book/positions'
import type { TradingCtx } from '../../src/modules/trading/context'
import { type Execution, writeExecutions } from '../../src/modules/trading/engine/executions'
import {
  RETRY_UNANSWERED_MS,
  RISK_WAIT_MAX_MS,
  TriggerEngine,
} from '../../src/modules/trading/engine/trigger-engine'

/** A bus id of a tick published `ago` ms before now. */
const tickNow = (ago = 0) => `${Date.now() - ago}-0`

/** `offsetMs`: Redis's clock less this host's, as the bus measured it (its ticks' ids are in Redis's). */
function engineWith(run: () => void, offsetMs: number | null = null) {
  const logs: { level: string; msg: string }[] = []
  const ctx = {
    bus: { kind: 'redis', clockOffsetMs: offsetMs },
    uow: {
      run: async (fn: (tx: unknown, work: unknown) => Promise<unknown>) => {
        run()
        return fn({}, {})
      },
    },
    logger: { log: (level: string, msg: string) => logs.push({ level, msg }) },
    clock: { now: () => Date.now() },
    engine: { isLeader: true },
  } as unknown as TradingCtx
  const engine = new TriggerEngine(ctx)
  const start = (batch: Execution[]) => (engine as unknown as { start(b: Execution[]): void }).start(batch)
  const writing = () => (engine as unknown as { writing: Set<number> }).writing
  return { engine, start, writing, logs }
}

test('an SL the database did not answer is written again once it does, the cursor held until then', async () => {
  let down = true
  const { engine, start, writing, logs } = engineWith(() => {
    if (down) throw new DatabaseBusy('no answer from the database in 8000 ms')
  })
  let written = 0
  start([
    {
      ticket: 7,
      tick: tickNow(),
      write: async () => {
        written++
        return 'sl'
      },
    },
  ])
  // the read is not settled: the cursor stays before its tick
  await expect(engine.settle()).rejects.toBeInstanceOf(CursorHeld)
  await Bun.sleep(300)
  await expect(engine.settle()).rejects.toBeInstanceOf(CursorHeld)
  expect(writing().has(7)).toBe(true)
  down = false
  const until = Date.now() + 5000
  while (written === 0 && Date.now() < until) await Bun.sleep(50)
  expect(written).toBe(1)
  expect(engine.stats.sl).toBe(1)
  expect(writing().has(7)).toBe(false)
  await engine.settle()
  expect(logs.some((l) => l.msg === 'trigger execution not written' && l.level === 'warn')).toBe(true)
  engine.reset()
})

test('an execution the database refuses is tried a bounded number of times, then left, logged', async () => {
  const { engine, start, writing, logs } = engineWith(() => {})
  let tries = 0
  start([
    {
      ticket: 9,
      tick: tickNow(),
      write: async () => {
        tries++
        throw new Error('CHECK constraint failed')
      },
    },
  ])
  // a refused write does not hold the cursor (a replay would not write it either)
  await engine.settle()
  const until = Date.now() + 8000
  while (writing().has(9) && Date.now() < until) await Bun.sleep(50)
  expect(writing().has(9)).toBe(false)
  expect(tries).toBe(5)
  expect(
    logs.filter((l) => l.msg === 'trigger execution left unwritten' && l.level === 'error'),
  ).toHaveLength(1)
  await engine.settle()
  engine.reset()
}, 15_000)

test('the engine giving up its role drops what waits to be written (the next engine replays it)', async () => {
  const { engine, start, writing } = engineWith(() => {
    throw new DatabaseBusy('no answer')
  })
  start([{ ticket: 3, tick: tickNow(), write: async () => 'sl' }])
  await engine.settle().catch(() => {})
  engine.reset()
  expect(writing().size).toBe(0)
  await engine.settle()
})

test('the engine role keeps its cursor before a read a settler did not settle (CursorHeld)', async () => {
  const saved: string[] = []
  let deliver: (entries: { id: string; type: string; data: unknown }[]) => Promise<void> = async () => {}
  const bus = {
    kind: 'redis',
    newest: async () => '1-0',
    subscribe: (_from: string, cb: typeof deliver) => {
      deliver = cb
      return { close: async () => {}, position: '$' }
    },
  }
  const leases = { hold: async () => ({ held: true }), release: async () => {}, holder: async () => null }
  const store = { get: async () => null, set: async (_k: string, v: string) => void saved.push(v) }
  const logs: string[] = []
  const logger = { log: (_level: string, msg: string) => logs.push(msg) }
  const role = new EngineRole('engine', bus as never, leases as never, store as never, 'me', logger as never)
  let hold = true
  role.onSettle(async () => {
    if (hold) throw new CursorHeld('1 trigger execution to write again')
  })
  await role.start(false)
  expect(role.isLeader).toBe(true)
  await deliver([{ id: '2-0', type: 'x', data: null }])
  // nothing at or past the held read is saved (the cursor goes just before it: a takeover replays it)
  expect(saved).toEqual(['1-18446744073709551615'])
  // said on purpose: not logged as a failure
  expect(logs).not.toContain('engine settle failed')
  hold = false
  await deliver([{ id: '3-0', type: 'x', data: null }])
  expect(saved).toEqual(['1-18446744073709551615', '3-0'])
  await role.stop()
})

/** A role on a fake Redis bus: `deliver` hands it a read, `saved` is every cursor it wrote. */
function roleOn(stored: string | null = null, offsetMs: number | null = null, newest = '1-0') {
  const saved: string[] = []
  const from: string[] = []
  let deliver: (entries: { id: string; type: string; data: unknown }[]) => Promise<void> = async () => {}
  let position = '$'
  const bus = {
    kind: 'redis',
    clockOffsetMs: offsetMs,
    newest: async () => newest,
    subscribe: (f: string, cb: typeof deliver) => {
      from.push(f)
      deliver = async (e) => {
        position = e.at(-1)!.id
        await cb(e)
      }
      return {
        close: async () => {},
        get position() {
          return position
        },
      }
    },
  }
  const leases = { hold: async () => ({ held: true }), release: async () => {}, holder: async () => null }
  const store = { get: async () => stored, set: async (_k: string, v: string) => void saved.push(v) }
  const logger = { log: () => {} }
  const role = new EngineRole('engine', bus as never, leases as never, store as never, 'me', logger as never)
  return { role, saved, from, deliver: (e: { id: string; type: string; data: unknown }[]) => deliver(e) }
}

test('stop() does not move the cursor past a read a settler holds', async () => {
  // (review: a graceful stop saved the subscription's position, past the held read)
  const { role, saved, deliver } = roleOn()
  role.onSettle(async () => {
    throw new CursorHeld('1 trigger execution to write again')
  })
  await role.start(false)
  await deliver([{ id: '2-0', type: 'x', data: null }])
  expect(saved.every((id) => compareIds(id, '2-0') < 0)).toBe(true)
  await role.stop()
  // the held read (2-0) must still be replayed by the next engine: nothing past it may be saved
  expect(saved.length).toBeGreaterThan(0)
  expect(saved.every((id) => compareIds(id, '2-0') < 0)).toBe(true)
})

test('a held read puts the cursor just before its oldest held entry at once, and a takeover replays from there', async () => {
  const t0 = Date.now() - 5000
  const { role, saved, deliver } = roleOn()
  let held: string | null = null
  role.onSettle(async () => {
    if (held) throw new CursorHeld('1 trigger execution to write again', held)
  })
  await role.start(false)
  await deliver([{ id: `${t0}-0`, type: 'x', data: null }])
  expect(saved).toEqual([`${t0}-0`])
  // a read of three entries whose second decided an execution the database did not take
  held = `${t0 + 2000}-1`
  await deliver([
    { id: `${t0 + 2000}-0`, type: 'x', data: null },
    { id: `${t0 + 2000}-1`, type: 'x', data: null },
    { id: `${t0 + 2000}-2`, type: 'x', data: null },
  ])
  expect(saved.at(-1)).toBe(`${t0 + 2000}-0`)
  // later reads stay held by it: nothing more is written
  await deliver([{ id: `${t0 + 3000}-0`, type: 'x', data: null }])
  expect(saved).toHaveLength(2)
  await role.stop()
  expect(saved.at(-1)).toBe(`${t0 + 2000}-0`)
  // the next engine reads from that cursor (younger than REPLAY_MAX_MS): the held entry is replayed
  const next = roleOn(saved.at(-1)!)
  await next.role.start(false)
  expect(next.from).toEqual([`${t0 + 2000}-0`])
  await next.role.stop()
})

test('an SL whose tick is too old for a takeover to replay is left, logged, and holds the cursor no longer', async () => {
  const { engine, start, writing, logs } = engineWith(() => {
    throw new DatabaseBusy('no answer')
  })
  // a takeover replays a cursor at most REPLAY_MAX_MS old: the hold ends before that
  expect(RETRY_UNANSWERED_MS).toBeLessThan(REPLAY_MAX_MS)
  start([{ ticket: 11, tick: tickNow(RETRY_UNANSWERED_MS + 1), write: async () => 'sl' }])
  await engine.settle()
  expect(writing().has(11)).toBe(false)
  expect(
    logs.filter((l) => l.msg === 'trigger execution left unwritten' && l.level === 'error'),
  ).toHaveLength(1)
  // one just younger holds the cursor (before its own tick, the oldest held) until it is too old, then is left
  const young = tickNow(RETRY_UNANSWERED_MS - 200)
  start([{ ticket: 12, tick: young, write: async () => 'sl' }])
  start([{ ticket: 13, tick: tickNow(1000), write: async () => 'sl' }])
  const held = await engine.settle().then(
    () => null,
    (e: unknown) => e,
  )
  expect(held).toBeInstanceOf(CursorHeld)
  expect((held as CursorHeld).from).toBe(young)
  await Bun.sleep(400)
  const later = await engine.settle().then(
    () => null,
    (e: unknown) => e,
  )
  expect(writing().has(12)).toBe(false)
  // still held by the younger one, before its own tick
  expect((later as CursorHeld).from).not.toBe(young)
  expect(writing().has(13)).toBe(true)
  engine.reset()
})

test('a stop-out does not look at an account whose SL waits to be written again', async () => {
  let down = true
  const { engine, start } = engineWith(() => {
    if (down) throw new DatabaseBusy('no answer')
  })
  const asked: number[] = []
  const ctx = (engine as unknown as { ctx: TradingCtx }).ctx as unknown as Record<string, unknown>
  ctx.accountsRead = {
    account: async (login: number) => {
      asked.push(login)
      return null
    },
  }
  const order = {
    ticket: 21,
    login: 500,
    symbol: 'EURUSD',
    state: 'open',
    cmd: 0,
    volume: 100,
    openPrice: 1.1,
    commission: 0,
    storage: 0,
    sl: 1.05,
    tp: 0,
    expiration: 0,
    updatedAt: 0,
  } as unknown as OrderRow
  engine.trackIn(order, 1)
  let written = 0
  start([
    {
      ticket: 21,
      tick: tickNow(),
      kind: 'sl',
      write: async () => {
        written++
        return 'sl'
      },
    },
  ])
  await expect(engine.settle()).rejects.toBeInstanceOf(CursorHeld)
  // its position is still on the book, its SL not written: a stop-out would close it at the price now
  expect(asked).toEqual([])
  await expect(engine.settle()).rejects.toBeInstanceOf(CursorHeld)
  expect(asked).toEqual([])
  down = false
  const until = Date.now() + 5000
  while (written === 0 && Date.now() < until) await Bun.sleep(50)
  expect(written).toBe(1)
  // once written it is looked at again
  await engine.settle()
  expect(asked).toContain(500)
  engine.reset()
})

test('a batch the database did not take arms one retry timer and is written again in one unit of work', async () => {
  let down = true
  let runs = 0
  const { engine, start, writing } = engineWith(() => {
    runs++
    if (down) throw new DatabaseBusy('no answer')
  })
  const n = 2000
  let written = 0
  const batch: Execution[] = Array.from({ length: n }, (_, i) => ({
    ticket: 1000 + i,
    tick: tickNow(),
    write: async () => {
      written++
      return 'sl' as const
    },
  }))
  const real = globalThis.setTimeout
  let timers = 0
  globalThis.setTimeout = ((fn: () => void, ms?: number) => {
    timers++
    return real(fn, ms)
  }) as typeof setTimeout
  try {
    start(batch)
    await expect(engine.settle()).rejects.toBeInstanceOf(CursorHeld)
  } finally {
    globalThis.setTimeout = real
  }
  // not one scan of every retry (and one timer) per execution not written
  expect(timers).toBeLessThanOrEqual(2)
  down = false
  runs = 0
  const until = Date.now() + 5000
  while (written < n && Date.now() < until) await Bun.sleep(50)
  expect(written).toBe(n)
  expect(runs).toBe(1)
  expect(writing().size).toBe(0)
  await engine.settle()
  engine.reset()
})

test('a write of an emptied book leaves the markers of the book loaded since', async () => {
  const gates: (() => void)[] = []
  const { engine, writing } = engineWith(() => {})
  const ctx = (engine as unknown as { ctx: TradingCtx }).ctx as unknown as Record<string, unknown>
  ctx.uow = {
    run: async (fn: (tx: unknown, work: unknown) => Promise<unknown>) => {
      await new Promise<void>((r) => gates.push(r))
      return fn({}, {})
    },
  }
  const start = (batch: Execution[]) => (engine as unknown as { start(b: Execution[]): void }).start(batch)
  start([{ ticket: 5, tick: tickNow(), write: async () => null }])
  // the role lost and taken again: the new book's tick decides the same ticket while the old write runs
  engine.reset()
  start([{ ticket: 5, tick: tickNow(), write: async () => 'sl' }])
  await Bun.sleep(10)
  expect(gates).toHaveLength(2)
  gates[0]!()
  await Bun.sleep(10)
  // the old write must not clear the new generation's marker (a later tick would decide it twice)
  expect(writing().has(5)).toBe(true)
  gates[1]!()
  await engine.settle()
  expect(writing().has(5)).toBe(false)
  engine.reset()
})

test('an execution written again records its tick time as the deal time; the first try the time it is written', async () => {
  let down = true
  const { engine, start } = engineWith(() => {
    if (down) throw new DatabaseBusy('no answer')
  })
  const at: (number | undefined)[] = []
  // a tick of today (one before midnight is dated when written: the next test)
  const tick = tickNow(Math.max(1, Math.min(3000, (Date.now() % 86_400_000) - 1)))
  start([
    {
      ticket: 31,
      tick,
      write: async (_tx, _work, a) => {
        at.push(a)
        return 'sl'
      },
    },
  ])
  await engine.settle().catch(() => {})
  down = false
  const until = Date.now() + 5000
  while (at.length === 0 && Date.now() < until) await Bun.sleep(50)
  expect(at).toEqual([Number(tick.split('-')[0])])
  const first: (number | undefined)[] = []
  start([
    {
      ticket: 32,
      tick,
      write: async (_tx, _work, a) => {
        first.push(a)
        return 'sl'
      },
    },
  ])
  await engine.settle()
  expect(first).toEqual([undefined])
  engine.reset()
})

/** An engine with login 500's position 21 (SL 1.05) on its book; `asked` lists the logins the risk check priced. */
function stopOutWatch(run: () => void, offsetMs: number | null = null) {
  const w = engineWith(run, offsetMs)
  const asked: number[] = []
  const ctx = (w.engine as unknown as { ctx: TradingCtx }).ctx as unknown as Record<string, unknown>
  ctx.accountsRead = {
    account: async (login: number) => {
      asked.push(login)
      return null
    },
  }
  w.engine.trackIn(
    {
      ticket: 21,
      login: 500,
      symbol: 'EURUSD',
      state: 'open',
      cmd: 0,
      volume: 100,
      openPrice: 1.1,
      commission: 0,
      storage: 0,
      sl: 1.05,
      tp: 0,
      expiration: 0,
      updatedAt: 0,
    } as unknown as OrderRow,
    1,
  )
  return { ...w, asked }
}

// review v2: a refused SL decided again by every tick kept its account out of the stop-out check for good
test('an account whose SL write is refused on every try is still looked at by the stop-out check', async () => {
  const { engine, start, writing, asked } = stopOutWatch(() => {})
  const decide = () =>
    start([
      {
        ticket: 21,
        tick: tickNow(),
        kind: 'sl',
        write: async () => {
          throw new Error('CHECK constraint failed')
        },
      },
    ])
  // every read has a tick past the SL: onTicks decides it again whenever it is not in `writing`
  const until = Date.now() + 9000
  while (Date.now() < until) {
    if (!writing().has(21)) decide()
    await engine.settle().catch(() => {})
    await Bun.sleep(100)
  }
  engine.reset()
  // about 90 settles over 9 s: the account (maybe below stop-out) was never priced
  expect(asked).toContain(500)
}, 20_000)

test('a pending order whose activation waits to be written again does not keep its account from the stop-out check', async () => {
  const { engine, start, asked } = stopOutWatch(() => {
    throw new DatabaseBusy('no answer')
  })
  // a pending buy limit of the same account, reached by a tick
  engine.trackIn(
    {
      ticket: 22,
      login: 500,
      symbol: 'EURUSD',
      state: 'pending',
      cmd: 2,
      volume: 100,
      openPrice: 1.09,
      commission: 0,
      storage: 0,
      sl: 0,
      tp: 0,
      expiration: 0,
      updatedAt: 0,
    } as unknown as OrderRow,
    1,
  )
  start([{ ticket: 22, tick: tickNow(), kind: 'activate', write: async () => 'activated' }])
  await expect(engine.settle()).rejects.toBeInstanceOf(CursorHeld)
  expect(asked).toContain(500)
  engine.reset()
})

test('an SL the database does not answer keeps its account from the stop-out check at most RISK_WAIT_MAX_MS from its first tick, decided again or not', async () => {
  const { engine, start, writing, asked } = stopOutWatch(() => {
    throw new DatabaseBusy('no answer')
  })
  expect(RISK_WAIT_MAX_MS).toBeLessThanOrEqual(RETRY_UNANSWERED_MS)
  const decide = (ago: number) =>
    start([{ ticket: 21, tick: tickNow(ago), kind: 'sl', write: async () => 'sl' }])
  // its first tick just younger than the bound: the account waits
  decide(RISK_WAIT_MAX_MS - 150)
  await expect(engine.settle()).rejects.toBeInstanceOf(CursorHeld)
  expect(asked).toEqual([])
  // its retry is left once its tick is too old; the next tick, past the SL still, decides it again at once
  const until = Date.now() + 3000
  while (writing().has(21) && Date.now() < until) await Bun.sleep(20)
  expect(writing().has(21)).toBe(false)
  decide(0)
  await expect(engine.settle()).rejects.toBeInstanceOf(CursorHeld)
  // its wait counts from the first tick that decided it: the account is priced now
  expect(asked).toContain(500)
  engine.reset()
})

// review v2: a close decided before midnight and written again after it was dated before midnight, with
// the swap of the night the daily rollover had charged since
test('an execution written again after the UTC midnight its tick preceded is dated at the time it is written', async () => {
  const midnight = Date.UTC(2026, 10, 30)
  let now = midnight + 5000
  const ctx = {
    bus: { kind: 'local' },
    uow: { run: async (fn: (tx: unknown, work: unknown) => Promise<unknown>) => fn({}, {}) },
    logger: { log: () => {} },
    clock: { now: () => now },
  } as unknown as TradingCtx
  const at: (number | undefined)[] = []
  const e: Execution = {
    ticket: 41,
    tick: `${midnight - 2000}-0`,
    kind: 'sl',
    write: async (_tx, _work, a) => {
      at.push(a)
      return 'sl'
    },
  }
  await writeExecutions(ctx, [e], true)
  // the same day: its tick's time
  now = midnight - 500
  await writeExecutions(ctx, [e], true)
  expect(at).toEqual([midnight + 5000, midnight - 2000])
})

/** A role over a resilient store (kernel/cache/resilient.ts) whose Redis answers a get with `get`. */
function roleOverStore(get: () => Promise<string | null>) {
  const from: string[] = []
  const logs: string[] = []
  const newest = `${Date.now() - 1000}-0`
  const bus = {
    kind: 'redis',
    newest: async () => newest,
    subscribe: (f: string) => {
      from.push(f)
      return { close: async () => {}, position: f }
    },
  }
  const leases = { hold: async () => ({ held: true }), release: async () => {}, holder: async () => null }
  const logger = { log: (_level: string, msg: string) => logs.push(msg) }
  const inner = {
    kind: 'redis',
    get,
    set: async () => {},
    ping: async () => true,
    close: async () => {},
  } as unknown as KeyValueStore
  const store = new ResilientStore(inner, logger as never)
  const role = new EngineRole('engine', bus as never, leases as never, store, 'me', logger as never)
  return { role, from, newest, logs, store }
}

// review v2: a cursor read that failed was taken for no cursor, and the last minute was replayed (candle
// volume counted twice)
test('a takeover whose cursor read fails starts from the newest entry; one that finds no cursor replays the last minute', async () => {
  // Redis does not answer in time
  const slow = roleOverStore(() => new Promise((r) => setTimeout(() => r(`${Date.now() - 30_000}-0`), 400)))
  await slow.role.start(false)
  expect(slow.from).toEqual([slow.newest])
  expect(slow.logs).toContain('engine cursor unreadable: reading from the newest entry')
  await slow.role.stop()
  slow.store.dependency.close()
  // Redis refuses the read
  const failing = roleOverStore(async () => {
    throw new Error('READONLY You cannot write against a read only replica')
  })
  await failing.role.start(false)
  expect(failing.from).toEqual([failing.newest])
  await failing.role.stop()
  failing.store.dependency.close()
  // Redis answers: no cursor
  const before = Date.now()
  const empty = roleOverStore(async () => null)
  await empty.role.start(false)
  expect(empty.from).toHaveLength(1)
  const ms = Number(empty.from[0]!.split('-')[0])
  expect(ms).toBeGreaterThanOrEqual(before - REPLAY_MAX_MS)
  expect(ms).toBeLessThan(before - REPLAY_MAX_MS + 5000)
  await empty.role.stop()
  empty.store.dependency.close()
})

// final review: bus ids are in Redis's clock, and the engine aged them in this host's (Date.now())
describe("a Redis clock 8 s off this host's", () => {
  const SKEW = 8000
  /** A bus id of a tick published `ago` ms before now in Redis's clock, `offset` ms ahead of this host's. */
  const redisTick = (offset: number, ago: number) => `${Date.now() + offset - ago}-0`

  test("Redis behind: an SL younger than RETRY_UNANSWERED_MS in the bus's clock is held, its account waits, and a takeover replays it", async () => {
    const { engine, start, writing, asked } = stopOutWatch(() => {
      throw new DatabaseBusy('no answer')
    }, -SKEW)
    const tick = redisTick(-SKEW, RISK_WAIT_MAX_MS - 3000)
    start([{ ticket: 21, tick, kind: 'sl', write: async () => 'sl' }])
    const held = await engine.settle().then(
      () => null,
      (e: unknown) => e,
    )
    // before the fix: aged RETRY_UNANSWERED_MS + 5 s by this host's clock, left unwritten at once and the
    // account priced for a stop-out ahead of its SL
    expect(held).toBeInstanceOf(CursorHeld)
    expect((held as CursorHeld).from).toBe(tick)
    expect(writing().has(21)).toBe(true)
    expect(asked).toEqual([])
    engine.reset()
    // the next engine reads from a cursor just that much younger than REPLAY_MAX_MS in Redis's clock
    const cursor = redisTick(-SKEW, REPLAY_MAX_MS - 3000)
    const next = roleOn(cursor, -SKEW, redisTick(-SKEW, 0))
    await next.role.start(false)
    // before the fix: taken for stale (REPLAY_MAX_MS + 5 s by this host's clock): read from the newest
    expect(next.from).toEqual([cursor])
    await next.role.stop()
  })

  test("Redis ahead: an SL older than RETRY_UNANSWERED_MS in the bus's clock is left; a cursor older than REPLAY_MAX_MS is not replayed, and no cursor replays REPLAY_MAX_MS of its clock", async () => {
    const { engine, start, writing, logs } = engineWith(() => {
      throw new DatabaseBusy('no answer')
    }, SKEW)
    start([
      { ticket: 11, tick: redisTick(SKEW, RETRY_UNANSWERED_MS + 1000), kind: 'sl', write: async () => 'sl' },
    ])
    // before the fix: aged RETRY_UNANSWERED_MS - 7 s by this host's clock, held past what a takeover replays
    await engine.settle()
    expect(writing().has(11)).toBe(false)
    expect(logs.filter((l) => l.msg === 'trigger execution left unwritten')).toHaveLength(1)
    engine.reset()
    const newest = redisTick(SKEW, 0)
    const stale = roleOn(redisTick(SKEW, REPLAY_MAX_MS + 3000), SKEW, newest)
    await stale.role.start(false)
    expect(stale.from).toEqual([newest])
    await stale.role.stop()
    const before = Date.now() + SKEW
    const none = roleOn(null, SKEW, newest)
    await none.role.start(false)
    const ms = Number(none.from[0]!.split('-')[0])
    // before the fix: REPLAY_MAX_MS + 8 s of Redis's clock replayed
    expect(ms).toBeGreaterThanOrEqual(before - REPLAY_MAX_MS)
    expect(ms).toBeLessThan(before - REPLAY_MAX_MS + 2000)
    await none.role.stop()
  })

  test("an execution written again is dated at its tick's time in this host's clock", async () => {
    const now = Date.UTC(2026, 10, 30, 12)
    const at: (number | undefined)[] = []
    for (const offset of [SKEW, -SKEW]) {
      const ctx = {
        bus: { kind: 'redis', clockOffsetMs: offset },
        uow: { run: async (fn: (tx: unknown, work: unknown) => Promise<unknown>) => fn({}, {}) },
        logger: { log: () => {} },
        clock: { now: () => now },
      } as unknown as TradingCtx
      // its tick 2 s before now, appended when Redis's clock read now + offset - 2 s
      await writeExecutions(
        ctx,
        [
          {
            ticket: 51,
            tick: `${now + offset - 2000}-0`,
            kind: 'sl',
            write: async (_tx, _w, a) => {
              at.push(a)
              return 'sl'
            },
          },
        ],
        true,
      )
    }
    // before the fix: now (Redis ahead: a tick time past now) and now - 10 s (Redis behind)
    expect(at).toEqual([now - 2000, now - 2000])
  })
})
