// The trigger engine's executions the database did not take (trading/engine/trigger-engine.ts,
// retryLater): written again until they commit, the cursor held meanwhile; one the database refuses is
// left after a bounded number of tries, so it never wedges the engine.
import { expect, test } from 'bun:test'
import { DatabaseBusy } from '../../src/kernel/db/errors'
import { CursorHeld, EngineRole } from '../../src/kernel/engine/role'
import type { TradingCtx } from '../../src/modules/trading/context'
import type { Execution } from '../../src/modules/trading/engine/executions'
import { TriggerEngine } from '../../src/modules/trading/engine/trigger-engine'

function engineWith(run: () => void) {
  const logs: { level: string; msg: string }[] = []
  const ctx = {
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
  start([{ ticket: 3, write: async () => 'sl' }])
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
  expect(saved).toEqual([])
  // said on purpose: not logged as a failure
  expect(logs).not.toContain('engine settle failed')
  hold = false
  await deliver([{ id: '3-0', type: 'x', data: null }])
  expect(saved).toEqual(['3-0'])
  await role.stop()
})
