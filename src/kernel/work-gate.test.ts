import { expect, test } from 'bun:test'
import { Overloaded, WorkGate } from './work-gate'

/** A run that ends when the test says so, recording how many ran at once. */
function runs() {
  let now = 0
  let most = 0
  const order: number[] = []
  const release: (() => void)[] = []
  const job = (id: number) => async () => {
    now++
    most = Math.max(most, now)
    order.push(id)
    await new Promise<void>((r) => release.push(r))
    now--
    return id
  }
  return { job, release, order, most: () => most, next: () => release.shift()!() }
}

const turn = () => new Promise((r) => setTimeout(r, 0))

test('at most `limit` run at once, the rest start in arrival order', async () => {
  const gate = new WorkGate('work', 2, 60_000, 1)
  const r = runs()
  const done = [1, 2, 3, 4, 5].map((id) => gate.run(r.job(id)))
  await turn()
  expect(r.order).toEqual([1, 2])
  while (r.release.length) {
    r.next()
    await turn()
  }
  expect(await Promise.all(done)).toEqual([1, 2, 3, 4, 5])
  expect(r.order).toEqual([1, 2, 3, 4, 5])
  expect(r.most()).toBe(2)
})

test('an arrival whose wait would pass the bound is refused at once, with a Retry-After', async () => {
  // one at a time, 1,000 ms a run expected: the second waits 1 s, the third 2 s, the fourth 3 s
  const gate = new WorkGate('password check', 1, 2000, 1000)
  const r = runs()
  const accepted = [gate.run(r.job(1)), gate.run(r.job(2)), gate.run(r.job(3))]
  const refused = await gate.run(r.job(4)).catch((e: unknown) => e)
  expect(refused).toBeInstanceOf(Overloaded)
  expect((refused as Overloaded).message).toBe('password check busy')
  expect((refused as Overloaded).retryAfterS).toBe(3)
  expect(gate.stats.refused).toBe(1)
  for (let i = 0; i < 3; i++) {
    await turn()
    r.next()
  }
  expect(await Promise.all(accepted)).toEqual([1, 2, 3])
  // the queue drained: the next arrival runs at once
  expect(gate.expectedWaitMs()).toBe(0)
})

test('a run that throws gives its slot back', async () => {
  const gate = new WorkGate('work', 1, 60_000, 1)
  await expect(gate.run(() => Promise.reject(new Error('boom')))).rejects.toThrow('boom')
  expect(await gate.run(async () => 'next')).toBe('next')
})

test('a waiter woken but never going on (a Worker request that ended) keeps no slot; the next one starts', async () => {
  class EndingRequest extends WorkGate {
    ends = true
    protected override park(ticket: number) {
      const woken = super.park(ticket)
      if (!this.ends) return woken
      this.ends = false
      // workerd never runs what follows a wait in a request that has ended, though it is woken
      return new Promise<void>(() => {})
    }
  }
  const gate = new EndingRequest('work', 1, 60_000, 1)
  const r = runs()
  const first = gate.run(r.job(1))
  void gate.run(r.job(2))
  const third = gate.run(r.job(3))
  await turn()
  r.next()
  expect(await first).toBe(1)
  await turn()
  expect(r.order).toEqual([1, 3])
  r.next()
  expect(await third).toBe(3)
  expect(gate.expectedWaitMs()).toBe(0)
  expect(await gate.run(async () => 'next')).toBe('next')
})
