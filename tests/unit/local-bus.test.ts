import { expect, test } from 'bun:test'
import { LocalBus } from '../../src/kernel/bus/local'

// found while measuring the quote stream's memory: the embedded bus kept 16,384 entries whatever each
// weighed, and an entry is a batch of up to 5,000 ticks (an ingest's): gigabytes of heap
test('the embedded bus keeps a bounded weight of entries (a batch of ticks weighs its ticks), the newest whatever it weighs', async () => {
  const bus = new LocalBus()
  const ids: string[] = []
  for (let i = 0; i < 20; i++) ids.push(await bus.publish('t', { i }, 5000))
  // 65,536 kept: the last 13 batches of 5,000; a resume from the last one dropped still misses nothing
  expect(await bus.range(ids[5]!, 100)).toBeNull()
  expect((await bus.range(ids[6]!, 100))!.map((e) => (e.data as { i: number }).i)).toEqual([
    7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19,
  ])
  // one entry heavier than all that is kept: it alone
  const heavy = await bus.publish('t', { i: 20 }, 100_000)
  expect(await bus.range(ids[18]!, 10)).toBeNull()
  expect((await bus.range(ids[19]!, 10))!.map((e) => e.id)).toEqual([heavy])
  // entries of weight 1 (a change) as before: the latest 65,536, in order, from any position kept
  const light: string[] = []
  for (let i = 0; i < 70_000; i++) light.push(await bus.publish('c', { i }))
  expect(await bus.range(light[70_000 - 65_538]!, 10)).toBeNull()
  const tail = (await bus.range(light[69_990]!, 100))!.map((e) => (e.data as { i: number }).i)
  expect(tail).toEqual([69_991, 69_992, 69_993, 69_994, 69_995, 69_996, 69_997, 69_998, 69_999])
  expect((await bus.range(light[70_000 - 65_536]!, 3))!.map((e) => (e.data as { i: number }).i)).toEqual([
    70_000 - 65_535,
    70_000 - 65_534,
    70_000 - 65_533,
  ])
  // a subscriber from a kept position gets what follows, in order
  const got: number[] = []
  const sub = bus.subscribe(
    light[69_995]!,
    (entries) => void got.push(...entries.map((e) => (e.data as { i: number }).i)),
  )
  await Bun.sleep(10)
  await sub.close()
  expect(got).toEqual([69_996, 69_997, 69_998, 69_999])
})
