import { describe, expect, test } from 'bun:test'
import { extractToken } from '../../src/kernel/auth/extract'
import type { Session } from '../../src/kernel/auth/session'
import { normalizeHost } from '../../src/kernel/brand/registry'
import { DEV_JWT_SECRET, loadConfig } from '../../src/kernel/config'
import { sameHost } from '../../src/kernel/http/security'
import { accountScope } from '../../src/modules/accounts/domain/access'
import { marginSnapshot } from '../../src/modules/accounts/domain/margin'
import { fromMinor, toMinor } from '../../src/modules/accounts/domain/money'
import { quoteAgeOver } from '../../src/modules/market/domain/quote-age'
import { cleanOriginalName, extensionOf } from '../../src/modules/uploads/domain/signature'

const s = (type: Session['type'], extra: Partial<Session> = {}): Session => ({
  type,
  brandId: 1,
  epoch: 0,
  jti: 'j',
  exp: 0,
  ...extra,
})

describe('money', () => {
  test('minor units by currency decimals; too much precision is refused', () => {
    expect(toMinor(123.45, 'USD')).toBe(12345)
    expect(toMinor(0.1 + 0.2, 'USD')).toBe(30)
    expect(toMinor(1.234, 'USD')).toBeNull()
    expect(toMinor(100, 'JPY')).toBe(100)
    expect(toMinor(1.5, 'JPY')).toBeNull()
    expect(fromMinor(12345, 'EUR')).toBe(123.45)
    // at any size (issue 27: 5000.004 was taken as 5000.00, 20.004 refused)
    for (const x of [20.004, 5000.004, 123456789.001, 0.001]) expect(toMinor(x, 'USD')).toBeNull()
    expect(toMinor(5000.01, 'USD')).toBe(500001)
    // every amount of cents round-trips
    for (let i = 0; i < 10_000; i++) {
      const minor = Math.floor(Math.random() * 1e13)
      expect(toMinor(fromMinor(minor, 'USD'), 'USD')).toBe(minor)
    }
  })
})

describe('margin snapshot', () => {
  test("money at the currency's own decimals: yen whole, bitcoin to the satoshi; the level a percentage", () => {
    const figures = {
      balance: 0.12345678,
      credit: 0,
      floatingProfit: 0.00000004,
      margin: 0.01,
      commission: 0,
      storage: 0,
    }
    expect(marginSnapshot(figures, 'BTC')).toMatchObject({ equity: 0.12345682, margin_free: 0.11345682 })
    expect(marginSnapshot(figures, 'USD')).toMatchObject({ equity: 0.12, margin_free: 0.11 })
    const yen = marginSnapshot(
      { ...figures, balance: 1_000_000, floatingProfit: -1234.6, margin: 33_333.4 },
      'JPY',
    )!
    expect(yen).toMatchObject({
      equity: 998_765,
      margin: 33_333,
      margin_free: 965_432,
      margin_level: 2996.29,
    })
  })

  test('equity = balance + credit + floating; level = equity / margin * 100; 0 without margin', () => {
    const m = marginSnapshot(
      {
        balance: 1000,
        credit: 100,
        floatingProfit: -50,
        margin: 200,
        commission: 0,
        storage: 0,
      },
      'USD',
    )!
    expect(m).toMatchObject({ equity: 1050, margin_free: 850, margin_level: 525 })
    expect(
      marginSnapshot(
        { balance: 1, credit: 0, floatingProfit: 0, margin: 0, commission: 0, storage: 0 },
        'USD',
      )!.margin_level,
    ).toBe(0)
    expect(
      marginSnapshot(
        {
          balance: Number.NaN,
          credit: 0,
          floatingProfit: 0,
          margin: 0,
          commission: 0,
          storage: 0,
        },
        'USD',
      ),
    ).toBeNull()
  })
})

describe('account scope', () => {
  test('user: own login only; customer: owner predicate; staff: login required', () => {
    expect(accountScope(s('SESSION_USER', { login: 5 }), undefined)).toEqual({ kind: 'login', login: 5 })
    expect(accountScope(s('SESSION_USER', { login: 5 }), 6)).toEqual({ kind: 'hidden' })
    expect(accountScope(s('SESSION_CUSTOMER', { customerId: 9 }), 6)).toEqual({
      kind: 'login',
      login: 6,
      customerId: 9,
    })
    expect(accountScope(s('SESSION_CUSTOMER', { customerId: 9 }), undefined)).toEqual({
      kind: 'only-account-of-customer',
      customerId: 9,
    })
    expect(accountScope(s('SESSION_DEALER'), undefined).kind).toBe('invalid')
    expect(accountScope(s('SESSION_ADMIN'), 7)).toEqual({ kind: 'login', login: 7 })
  })
})

describe('small helpers', () => {
  test('token extraction: bare, Bearer, cookie', () => {
    expect(extractToken('abc', undefined, 'tcs_session')).toBe('abc')
    expect(extractToken('Bearer abc', 'tcs_session=zzz', 'tcs_session')).toBe('abc')
    expect(extractToken(undefined, 'a=1; tcs_session=cookie-token; b=2', 'tcs_session')).toBe('cookie-token')
    expect(extractToken(undefined, 'other=x', 'tcs_session')).toBeNull()
    expect(extractToken(undefined, 'tcs_session=a%2Eb', 'tcs_session')).toBe('a.b')
    expect(extractToken('', undefined, 'tcs_session')).toBeNull()
  })
  test('host normalization drops the port', () => {
    expect(normalizeHost('Beta.LocalHost:3000')).toBe('beta.localhost')
    expect(normalizeHost('[::1]:3000')).toBe('[::1]')
  })
  test('upload names', () => {
    expect(extensionOf('a.b.PNG')).toBe('png')
    expect(cleanOriginalName('../../etc/pa"ss<wd>.txt')).toBe('passwd.txt')
  })
})

describe('configuration', () => {
  test('production refuses to start without a 32-byte JWT_SECRET and never seeds', () => {
    expect(() => loadConfig({ APP_ENV: 'production' })).toThrow(/JWT_SECRET/)
    expect(() => loadConfig({ APP_ENV: 'production', JWT_SECRET: 'short' })).toThrow(/JWT_SECRET/)
    const secret = 'q7Vt2pX9LmRz4sKw8NcYb3HdJf6GaE1uTo5iPnQx'
    const c = loadConfig({ APP_ENV: 'production', JWT_SECRET: secret })
    expect(c.seedDemo).toBe(false)
    expect(() => loadConfig({ PORT: 'abc' })).toThrow(/PORT/)
    expect(loadConfig({}).clusterJobs).toBe('internal')
    expect(() => loadConfig({ CLUSTER_JOBS: 'external' })).toThrow(/CLUSTER_JOBS: external needs CRON_SECRET/)
    expect(
      loadConfig({ CLUSTER_JOBS: 'external', CRON_SECRET: '0f9a1c7e3b5d2a8c4e6f0b1d3a5c7e9f' }).clusterJobs,
    ).toBe('external')
    expect(() => loadConfig({ CLUSTER_JOBS: 'sometimes' })).toThrow(/CLUSTER_JOBS/)
    expect(loadConfig({ REDIS_URL: 'redis://127.0.0.1:6379' }).cache.kind).toBe('redis')
  })

  test('production refuses the published development secret and secrets of low entropy', () => {
    expect(() => loadConfig({ APP_ENV: 'production', JWT_SECRET: DEV_JWT_SECRET })).toThrow(
      /development secret/,
    )
    for (const weak of [
      'x'.repeat(40),
      'abababababababababababababababab',
      'changeme-changeme-changeme-changeme',
    ])
      expect(() => loadConfig({ APP_ENV: 'production', JWT_SECRET: weak })).toThrow(/not random enough/)
    // development keeps working with the built-in secret
    expect(loadConfig({}).jwt.secret).toBe(DEV_JWT_SECRET)
    const secret = 'q7Vt2pX9LmRz4sKw8NcYb3HdJf6GaE1uTo5iPnQx'
    expect(() =>
      loadConfig({ APP_ENV: 'production', JWT_SECRET: secret, FEED_TOKEN: 'feedfeedfeedfeedfeedfeed' }),
    ).toThrow(/FEED_TOKEN/)
    expect(
      loadConfig({
        APP_ENV: 'production',
        JWT_SECRET: secret,
        FEED_TOKEN: 'c41f0e9a7b2d58e6f3a1c907be4d2f86',
      }).quotes.feedToken,
    ).toBe('c41f0e9a7b2d58e6f3a1c907be4d2f86')
  })

  test('DATABASE_CACHE_MB: 64 by default, whole megabytes from 2 to 4096', () => {
    expect(loadConfig({}).database.cacheMb).toBe(64)
    expect(loadConfig({ DATABASE_CACHE_MB: '256' }).database.cacheMb).toBe(256)
    for (const bad of ['1', '5000', '1.5', 'lots'])
      expect(() => loadConfig({ DATABASE_CACHE_MB: bad })).toThrow(/DATABASE_CACHE_MB/)
  })

  test('MEMORY_LOCK is gone (ADR 0005 superseded): an old deployment that still sets it starts as before', () => {
    const c = loadConfig({ MEMORY_LOCK: 'all' }) as unknown as Record<string, unknown>
    expect(c.memoryLock).toBeUndefined()
  })
})

describe('a quote past its symbol limit (max_quote_age)', () => {
  test('no limit, within it, at it, past it, and a quote stamped ahead of the clock', () => {
    const now = 1_000_000
    expect(quoteAgeOver(0, now - 3_600_000, now)).toBeNull()
    expect(quoteAgeOver(5, now - 4_999, now)).toBeNull()
    expect(quoteAgeOver(5, now - 5_000, now)).toBeNull()
    expect(quoteAgeOver(5, now - 6_500, now)).toBe(6)
    expect(quoteAgeOver(5, now + 2_000, now)).toBeNull()
  })
})

describe("CSRF: a page's Origin against the host a request names (sameHost)", () => {
  test('the same name; the same port where the Host gives one, an Origin without one at its default', () => {
    expect(sameHost('http://localhost:3000', 'localhost:3000')).toBe(true)
    expect(sameHost('http://LOCALHOST', 'localhost')).toBe(true)
    expect(sameHost('http://[::1]:3000', '[::1]:3000')).toBe(true)
    // a proxy writing $host:$server_port, or dropping the port ($host)
    expect(sameHost('https://app.example.com', 'app.example.com:443')).toBe(true)
    expect(sameHost('https://app.example.com:8443', 'app.example.com')).toBe(true)
    expect(sameHost('http://localhost:8081', 'localhost:3000')).toBe(false)
    expect(sameHost('https://app.example.com', 'app.example.com:80')).toBe(false)
    expect(sameHost('http://evil.localhost', 'localhost')).toBe(false)
    expect(sameHost('null', 'localhost')).toBe(false)
    expect(sameHost('http://localhost', null)).toBe(false)
  })
})
