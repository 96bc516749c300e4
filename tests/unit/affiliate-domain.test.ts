// The pure parts of attribution and affiliate conversions (issue 30): rules 1-4, the winning touch,
// attribution values, bots, hosts and landing paths, the postback signature and backoff.
import { describe, expect, test } from 'bun:test'
import { createHmac } from 'node:crypto'
import { deriveConversions, type Fact } from '../../src/modules/affiliate/domain/conversions'
import {
  hostnameOrNull,
  landingPathOrNull,
  postbackHostAllowed,
} from '../../src/modules/affiliate/domain/hosts'
import { backoffMs, expandPostbackUrl, signPostback } from '../../src/modules/affiliate/domain/postback'
import { isBot } from '../../src/modules/attribution/domain/bots'
import { parseParams, parseReferrer } from '../../src/modules/attribution/domain/params'
import { chooseTouch } from '../../src/modules/attribution/domain/winner'

let id = 0
const f = (kind: Fact['kind'], eventTime: number, o: Partial<Fact> = {}): Fact => ({
  kind,
  reference: 'r',
  valueMinor: null,
  currency: '',
  volume: 0,
  eventId: ++id,
  eventTime,
  ...o,
})
const rules = { activeTraderCentilots: 0 }
const byKey = (facts: Fact[], r = rules) =>
  Object.fromEntries(deriveConversions(facts, r).map((x) => [x.key, x]))

describe('conversion rules', () => {
  test('rule 1: the once-kinds keep their first occurrence, whatever the order given', () => {
    const facts = [f('kyc', 300), f('kyc', 100), f('registration', 50), f('registration', 20)]
    const rows = byKey(facts)
    expect(rows.kyc_approval.eventTime).toBe(100)
    expect(rows.registration.eventTime).toBe(20)
    expect(byKey([...facts].reverse())).toEqual(rows)
  })

  test('rule 2: a later event fills only empty fields', () => {
    const rows = byKey([
      f('deposit', 10, { reference: 'tx1', valueMinor: null, currency: '' }),
      f('deposit', 20, { reference: 'tx1', valueMinor: 500, currency: 'USD' }),
      f('deposit', 30, { reference: 'tx1', valueMinor: 900, currency: 'EUR' }),
    ])
    expect(rows['deposit:tx1']).toMatchObject({ valueMinor: 500, currency: 'USD', eventTime: 10 })
    expect(rows.first_deposit).toMatchObject({ valueMinor: 500, currency: 'USD', eventTime: 10 })
  })

  test('rules 3 and 4: a Deposit row per transaction, the first deposit is the earliest, reversals are negative', () => {
    const rows = byKey([
      f('deposit', 30, { reference: 'c', valueMinor: 300, currency: 'USD' }),
      f('deposit', 10, { reference: 'a', valueMinor: 100, currency: 'USD' }),
      f('deposit', 20, { reference: 'b', valueMinor: 200, currency: 'USD' }),
      f('reversal', 40, { reference: 'b', valueMinor: 200, currency: 'USD' }),
    ])
    expect(Object.keys(rows).sort()).toEqual([
      'deposit:a',
      'deposit:b',
      'deposit:c',
      'deposit_reversal:b',
      'first_deposit',
    ])
    expect(rows.first_deposit).toMatchObject({ referenceId: 'a', valueMinor: 100 })
    expect(rows['deposit_reversal:b'].valueMinor).toBe(-200)
  })

  test('active trader: first closed trade, or the lots summed in time order; a ticket counts once; demo trades never', () => {
    // a trade on a REAL account carries its currency; a demo account's carries none
    const real = { currency: 'USD' }
    expect(byKey([f('trade', 5, { reference: 't1', volume: 1, ...real })]).active_trader).toMatchObject({
      referenceId: 't1',
      valueMinor: 1,
    })
    expect(byKey([f('trade', 5, { reference: 'd1', volume: 500 })]).active_trader).toBeUndefined()
    const lots = { activeTraderCentilots: 100 }
    const trades = [
      f('trade', 30, { reference: 't3', volume: 60, ...real }),
      f('trade', 10, { reference: 't1', volume: 50, ...real }),
      f('trade', 11, { reference: 't1', volume: 50, ...real }),
      f('trade', 20, { reference: 't2', volume: 40, ...real }),
      f('trade', 25, { reference: 'd2', volume: 900 }),
    ]
    expect(byKey(trades, lots).active_trader).toMatchObject({
      referenceId: 't3',
      valueMinor: 150,
      eventTime: 30,
    })
    expect(byKey(trades.slice(1), lots).active_trader).toBeUndefined()
  })
})

describe('winning touch', () => {
  const touch = (id: number, createdAt: number, direct = 0, bot = 0) => ({ id, createdAt, direct, bot })
  const now = 100 * 86_400_000
  const windowMs = 30 * 86_400_000
  test('last non-direct touch wins over a later direct visit; bots and old touches never win', () => {
    const list = [
      touch(1, now - 5_000),
      touch(2, now - 4_000),
      touch(3, now - 1_000, 1),
      touch(4, now - 500, 0, 1),
    ]
    expect(chooseTouch(list, { now, windowMs })).toMatchObject({ touchId: 2, wonBy: 'last_touch' })
    expect(chooseTouch([touch(3, now - 1_000, 1)], { now, windowMs })).toMatchObject({
      touchId: 3,
      wonBy: 'last_direct',
    })
    expect(chooseTouch([touch(5, now - windowMs - 1)], { now, windowMs }).wonBy).toBe('none')
    expect(chooseTouch([touch(4, now - 500, 0, 1)], { now, windowMs }).wonBy).toBe('none')
  })
  test('install before body before cookie; a bot install does not win', () => {
    const cookie = [touch(1, now - 1_000)]
    expect(
      chooseTouch(cookie, { now, windowMs, installTouch: touch(9, now - 9e6), bodyTouch: touch(8, now) })
        .wonBy,
    ).toBe('install')
    expect(
      chooseTouch(cookie, { now, windowMs, installTouch: touch(9, now, 0, 1), bodyTouch: touch(8, now) })
        .wonBy,
    ).toBe('registration_body')
    expect(chooseTouch(cookie, { now, windowMs }).considered).toEqual([1])
  })
})

describe('attribution values', () => {
  test('known names and aliases, bounded, plain text; the first of a repeated name wins', () => {
    const p = parseParams(
      new URLSearchParams(
        `aff=A1&affiliate=A2&gclid=g&utm_source=x&sub6=no&campaign=${'y'.repeat(129)}&sub1=<script>`,
      ),
    )
    expect(p).toEqual({ affiliate: 'A1', click_id: 'g', utm_source: 'x' })
    expect(parseReferrer('utm_source%3Dplay%26affiliate%3DP1')).toEqual({
      utm_source: 'play',
      affiliate: 'P1',
    })
  })
  test('bots by user agent', () => {
    expect(isBot('Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)')).toBe(true)
    expect(isBot('curl/8.5.0')).toBe(true)
    expect(isBot(null)).toBe(true)
    expect(
      isBot(
        'Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 Mobile/15E148 Safari/604.1',
      ),
    ).toBe(false)
  })
})

describe('hosts and paths', () => {
  test('affiliate_host is a bare hostname', () => {
    expect(hostnameOrNull('Partners.Example.COM')).toBe('partners.example.com')
    for (const bad of ['https://a.b', 'a.b:80', 'a.b/x', 'a..b', '-a.b', 'a b', 'user@a.b', ''])
      expect(hostnameOrNull(bad)).toBeNull()
  })
  test('landing paths stay on the host', () => {
    expect(landingPathOrNull('/p/promo?x=1#top')).toBe('/p/promo?x=1#top')
    for (const bad of ['//evil.example', '/\\evil.example', 'https://evil.example', 'evil', '/a b', '/\tx'])
      expect(landingPathOrNull(bad)).toBeNull()
  })
  test('postback URLs: http(s) on the allowlist, no credentials', () => {
    expect(postbackHostAllowed('https://hooks.partner.example/p', ['hooks.partner.example'])).toBe(true)
    expect(postbackHostAllowed('https://evil.example/p', ['hooks.partner.example'])).toBe(false)
    expect(postbackHostAllowed('https://u:p@hooks.partner.example/p', ['hooks.partner.example'])).toBe(false)
    expect(postbackHostAllowed('file:///etc/passwd', ['hooks.partner.example'])).toBe(false)
  })
})

describe('postback signature', () => {
  test('t=<unix>,v1=<HMAC-SHA256 of "<t>.<body>">, and a backoff that doubles to an hour', () => {
    const sig = signPostback('s3cret', 1_700_000_000, '{"a":1}')
    expect(sig).toBe(
      `t=1700000000,v1=${createHmac('sha256', 's3cret').update('1700000000.{"a":1}').digest('hex')}`,
    )
    expect([1, 2, 3, 8, 20].map(backoffMs)).toEqual([30_000, 60_000, 120_000, 3_600_000, 3_600_000])
  })
})

test("a postback URL's macros are the conversion's own values: `{constructor}` or `{__proto__}` expand to nothing", () => {
  const body = JSON.stringify({ conversion: { kind: 'ftd', value: 100, tracking: { click_id: 'c1' } } })
  expect(
    expandPostbackUrl(
      'https://t.example/pb?e={event}&c={click_id}&x={constructor}&y={__proto__}&z={tostring}',
      body,
    ),
  ).toBe('https://t.example/pb?e=ftd&c=c1&x=&y=&z=')
})
