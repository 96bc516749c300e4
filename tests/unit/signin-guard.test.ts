// The sign-in guard under steady parallel guessing, on a store with a round trip on every call (Redis
// across instances): no more passwords of one identity are checked than the limit, however the attempts
// interleave (a review found a write-back of the counter that let refused attempts wear the lock down:
// 601 passwords checked in 3 s with a limit of 10).
import { expect, test } from 'bun:test'
import { SignInGuard } from '../../src/kernel/auth/signin-guard'
import { MemoryStore } from '../../src/kernel/cache/memory'
import { RedisStore } from '../../src/kernel/cache/redis'
import { ResilientStore } from '../../src/kernel/cache/resilient'
import type { KeyValueStore } from '../../src/kernel/cache/store'
import { clientIp } from '../../src/kernel/http/http'
import type { Kernel } from '../../src/kernel/kernel'
import { silentLogger } from '../../src/kernel/logger'

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

const guardOn = (store: KeyValueStore, maxFailuresPerIp = 1_000_000) =>
  new SignInGuard({
    store,
    config: { signin: { maxFailures: 10, maxFailuresPerIp, lockSeconds: 900 } },
  } as unknown as Pick<Kernel, 'store' | 'config'>)
const wrong = async () => {
  await Bun.sleep(20) // the password's hash
  return { ok: false }
}

test('40 guessers for a second: ten passwords checked, then only refusals', async () => {
  const guard = guardOn(remote(new MemoryStore()))
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

test('one password sprayed over 200 logins at once from one address: twenty checked', async () => {
  const guard = guardOn(remote(new MemoryStore()), 20)
  let checked = 0
  await Promise.all(
    Array.from({ length: 200 }, (_, i) =>
      guard
        .attempt(1, `acct:${i}`, '198.51.100.1', () => {
          checked++
          return wrong()
        })
        .catch(() => null),
    ),
  )
  expect(checked).toBe(20)
})

test("a locked address cannot lock someone else's account: its owner still signs in", async () => {
  const memory = new MemoryStore()
  const guard = guardOn(remote(memory), 20)
  await memory.set('auth:fail:ip:203.0.113.9', '20', 900_000)
  let checked = 0
  await Promise.all(
    Array.from({ length: 30 }, () =>
      guard
        .attempt(1, 'acct:42', '203.0.113.9', () => {
          checked++
          return wrong()
        })
        .catch(() => null),
    ),
  )
  expect(checked).toBe(0)
  expect(Number((await memory.get('auth:fail:id:1:acct:42')) ?? 0)).toBe(0)
  const owner = await guard.attempt(1, 'acct:42', '192.0.2.77', async () => ({ ok: true }))
  expect(owner.ok).toBe(true)
})

test('Redis unreachable: the limit holds, counted by this process meanwhile', async () => {
  // nothing listens on port 1: every call of the shared store fails and answers its fallback
  const down = new ResilientStore(new RedisStore('redis://127.0.0.1:1', 200), silentLogger, 100)
  const guard = guardOn(down)
  let checked = 0
  for (let i = 0; i < 14; i++)
    await guard
      .attempt(1, 'acct:redis-down', '192.0.2.50', async () => {
        checked++
        return { ok: false }
      })
      .catch(() => null)
  expect(checked).toBe(10)
  await down.close()
})

test('an address that cannot be known is not limited (it would be every client), the identity still is', async () => {
  const guard = guardOn(new MemoryStore(), 20)
  let checked = 0
  const guess = (login: number) =>
    guard
      .attempt(1, `acct:${login}`, 'unknown', async () => {
        checked++
        return { ok: false }
      })
      .catch(() => null)
  for (let i = 0; i < 30; i++) await guess(i)
  expect(checked).toBe(30)
  for (let i = 0; i < 12; i++) await guess(1000)
  expect(checked).toBe(40)
})

test("the client's address: Cloudflare's header at the edge; behind a trusted proxy, the entry it appended", () => {
  const request = new Request('http://x/', {
    headers: { 'x-forwarded-for': '198.51.100.7, 203.0.113.5', 'cf-connecting-ip': '192.0.2.9' },
  })
  const at = (edge: boolean, trustProxy: boolean) =>
    clientIp({ edge, config: { trustProxy } } as unknown as Kernel, request, null)
  expect(at(true, false)).toBe('192.0.2.9')
  // the first entry is whatever the client sent
  expect(at(false, true)).toBe('203.0.113.5')
  expect(at(false, false)).toBe('unknown')
})
