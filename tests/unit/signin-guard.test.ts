// The sign-in guard under steady parallel guessing, on a store with a round trip on every call (Redis
// across instances): no more passwords of one identity are checked than the limit, however the attempts
// interleave (a review found a write-back of the counter that let refused attempts wear the lock down:
// 601 passwords checked in 3 s with a limit of 10).
import { expect, test } from 'bun:test'
import { SignInGuard } from '../../src/kernel/auth/signin-guard'
import { MemoryStore } from '../../src/kernel/cache/memory'
import type { KeyValueStore } from '../../src/kernel/cache/store'
import type { Kernel } from '../../src/kernel/kernel'

const roundTrip = () => new Promise((r) => setTimeout(r, Math.random() * 2))

/** The store, each call delayed before and after by up to 2 ms. */
function remote(store: MemoryStore): KeyValueStore {
  return new Proxy(store, {
    get(target, prop) {
      const v = Reflect.get(target, prop)
      if (typeof v !== 'function') return v
      return async (...args: unknown[]) => {
        await roundTrip()
        const r = await v.apply(target, args)
        await roundTrip()
        return r
      }
    },
  })
}

test('40 guessers for a second: ten passwords checked, then only refusals', async () => {
  const guard = new SignInGuard({
    store: remote(new MemoryStore()),
    config: { signin: { maxFailures: 10, maxFailuresPerIp: 1_000_000, lockSeconds: 900 } },
  } as unknown as Pick<Kernel, 'store' | 'config'>)
  let checked = 0
  const codes = new Map<string, number>()
  const guess = () =>
    guard
      .attempt(1, 'acct:1', '192.0.2.1', async () => {
        checked++
        await Bun.sleep(20) // the password's hash
        return { ok: false }
      })
      .catch((e: { code?: string }) => codes.set(e.code ?? '?', (codes.get(e.code ?? '?') ?? 0) + 1))
  const until = Date.now() + 1000
  await Promise.all(
    Array.from({ length: 40 }, async () => {
      while (Date.now() < until) await guess()
    }),
  )
  expect(checked).toBe(10)
  expect(codes.get('USER_NOT_FOUND_OR_INCORRECT')).toBe(10)
  expect(codes.get('TOO_MANY_ATTEMPTS')).toBeGreaterThan(100)
})
