// The pure parts of the affiliate findings of a hostile probe: IPv6 read into its bytes
// however it is written (an IPv4 address mapped, NAT64 or 6to4 judged as that address), postback ports,
// which first deposits a tiered plan counts, and a close that rounds a period's RevShare once.
import { describe, expect, test } from 'bun:test'
import { type FactRow, firstDepositCounts } from '../../src/modules/affiliate/domain/commissions'
import { postbackHostAllowed, postbackHostEntryOrNull } from '../../src/modules/affiliate/domain/hosts'
import {
  ipv6Bytes,
  isInternalAddress,
  isInternalHost,
} from '../../src/modules/affiliate/domain/internal-address'
import { closeRows } from '../../src/modules/affiliate/domain/periods'
import type { PlanTerms } from '../../src/modules/affiliate/domain/plans'

describe('IPv6, however written', () => {
  test('read into 16 bytes: compressed, uncompressed, a dotted tail, brackets, a zone', () => {
    const loopback = [...new Array(15).fill(0), 1]
    for (const text of [
      '::1',
      '0:0:0:0:0:0:0:1',
      '0000:0000:0000:0000:0000:0000:0000:0001',
      '[::1]',
      '::0:1',
      '::1%lo',
    ])
      expect(ipv6Bytes(text), text).toEqual(loopback)
    const mapped = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 255, 255, 127, 0, 0, 1]
    for (const text of [
      '::ffff:127.0.0.1',
      '::ffff:7f00:1',
      '::FFFF:7F00:0001',
      '0:0:0:0:0:ffff:7f00:1',
      '0:0:0:0:0:ffff:127.0.0.1',
    ])
      expect(ipv6Bytes(text), text).toEqual(mapped)
    for (const bad of [
      '',
      '1.2.3.4',
      ':::',
      '1::2::3',
      '1:2:3:4:5:6:7:8:9',
      '1:2:3:4:5:6:7',
      '::12345',
      '::1.2.3',
      '1.2.3.4::',
      'g::1',
      '::1:2:3:4:5:6:7:8',
    ])
      expect(ipv6Bytes(bad), bad).toBeNull()
  })

  test('internal: loopback, unspecified, IPv4 mapped in any notation, NAT64 and 6to4 of an internal IPv4, local and special blocks', () => {
    for (const ip of [
      '::',
      '::1',
      '0:0:0:0:0:0:0:1',
      '::ffff:7f00:1',
      '::ffff:a9fe:a9fe',
      '::ffff:a00:1',
      '0:0:0:0:0:ffff:7f00:1',
      '[::ffff:7f00:1]',
      '::ffff:169.254.169.254',
      '::ffff:0:a00:1', // IPv4-translated
      '::10.0.0.1', // IPv4-compatible (deprecated)
      '::8.8.8.8',
      '64:ff9b::a9fe:a9fe', // NAT64 to the metadata address
      '64:ff9b::10.0.0.1',
      '64:ff9b:1::808:808', // local-use NAT64
      '2002:7f00:1::1', // 6to4 of 127.0.0.1
      '2002:c0a8:101::1', // 6to4 of 192.168.1.1
      'fc00::1',
      'fd12:3456::1',
      'fe80::1',
      'fe80::1%eth0',
      'febf::1',
      'fec0::1',
      'ff02::1',
      'ff05::2',
      '100::1', // discard-only
      '2001::1', // Teredo
      '2001:2::1', // benchmarking
      '2001:db8::1', // documentation
      '3fff::1',
      '::1:2:3', // not global unicast
      'not:an:address',
    ])
      expect([ip, isInternalAddress(ip), isInternalHost(ip)]).toEqual([ip, true, true])
    for (const ip of [
      '2606:2800:220:1::1',
      '2a00:1450:4001:81c::200e',
      '::ffff:8.8.8.8',
      '::ffff:808:808',
      '64:ff9b::808:808',
      '2002:808:808::1',
      '2001:4860:4860::8888',
      '3ffe::1',
    ])
      expect([ip, isInternalAddress(ip), isInternalHost(ip)]).toEqual([ip, false, false])
  })

  test('an IPv4 host in a form a URL reads as another (2130706433, 0x7f.1, 127.1) is the address it is', () => {
    for (const h of ['2130706433', '0x7f.1', '127.1', '0177.0.0.1', '169.254.43518'])
      expect([h, isInternalHost(h)]).toEqual([h, true])
    expect(isInternalHost('8.8.8.8')).toBe(false)
    expect(isInternalHost('tracker.example.com')).toBe(false)
  })
})

describe('postback ports', () => {
  test('a bare host allows 80 and 443; an entry with a port, that port only', () => {
    const list = ['hooks.example', 'alt.example:8443']
    for (const ok of [
      'https://hooks.example/p',
      'http://hooks.example/p',
      'http://hooks.example:80/p',
      'https://hooks.example:443/p',
      'http://hooks.example:443/p',
      'https://alt.example:8443/p',
    ])
      expect([ok, postbackHostAllowed(ok, list)]).toEqual([ok, true])
    for (const bad of [
      'https://hooks.example:8443/p',
      'http://hooks.example:6379/',
      'http://hooks.example:22/',
      'https://alt.example/p',
      'https://alt.example:8444/p',
      'https://evil.example/p',
      'https://u:p@hooks.example/p',
    ])
      expect([bad, postbackHostAllowed(bad, list)]).toEqual([bad, false])
  })

  test('an allowlist entry is a hostname or hostname:port', () => {
    expect(postbackHostEntryOrNull('Hooks.Example')).toBe('hooks.example')
    expect(postbackHostEntryOrNull('hooks.example:08443')).toBe('hooks.example:8443')
    expect(postbackHostEntryOrNull(' hooks.example:1 ')).toBe('hooks.example:1')
    for (const bad of [
      'hooks.example:0',
      'hooks.example:65536',
      'hooks.example:',
      ':80',
      'a:b',
      'https://a.b',
      'a.b/x:80',
      '[::1]:80',
    ])
      expect([bad, postbackHostEntryOrNull(bad)]).toEqual([bad, null])
  })
})

describe('the first deposits a tiered plan counts', () => {
  const DAY = 86_400_000
  const T0 = Date.UTC(2026, 9, 1)
  let id = 1
  const fact = (kind: FactRow['kind'], at: number, o: Partial<FactRow> = {}): FactRow => ({
    id: id++,
    kind,
    reference: 'tx1',
    valueMinor: null,
    currency: 'USD',
    volume: 0,
    eventId: id,
    eventTime: T0 + at,
    ...o,
  })
  const terms = (o: Partial<PlanTerms> = {}): PlanTerms => ({
    type: 'tiered_revshare',
    revshare_bp: 1000,
    tiers: [{ from: 3, bp: 3000 }],
    tier_metric: 'customers',
    hold_days: 7,
    sub_affiliate_bp: 0,
    ...o,
  })
  const counts = (facts: FactRow[], t: PlanTerms | null = terms()) =>
    firstDepositCounts(facts, () => t)?.counts

  test('a first deposit charged back or refunded within the hold does not count; after it, or in part, it does', () => {
    const dep = fact('deposit', DAY, { valueMinor: 1 })
    expect(counts([dep])).toBe(true)
    expect(counts([dep, fact('reversal', DAY + 3_600_000, { valueMinor: -1 })])).toBe(false)
    expect(counts([dep, fact('reversal', 8 * DAY + 1, { valueMinor: -1 })])).toBe(true)
    const big = fact('deposit', DAY, { valueMinor: 5_000 })
    expect(counts([big, fact('reversal', 2 * DAY, { valueMinor: -1_000 })])).toBe(true)
    // no deposit: nothing to count
    expect(firstDepositCounts([fact('kyc', DAY)], () => terms())).toBeNull()
    // without a plan at the time, a deposit reversed in full never stood
    expect(counts([dep, fact('reversal', 300 * DAY, { valueMinor: -1 })], null)).toBe(false)
  })

  test('the plan qualifying rules, as the CPA applies them: minimum, KYC, lots in their days', () => {
    const dep = fact('deposit', DAY, { valueMinor: 5_000 })
    const min = terms({ qualify: { min_first_deposit: { USD: 10_000 } } })
    expect(counts([dep], min)).toBe(false)
    expect(counts([fact('deposit', DAY, { valueMinor: 10_000 })], min)).toBe(true)
    // a refund that leaves less than the minimum within the hold voids it
    expect(
      counts(
        [fact('deposit', DAY, { valueMinor: 10_000 }), fact('reversal', 2 * DAY, { valueMinor: -1 })],
        min,
      ),
    ).toBe(false)
    const kyc = terms({ qualify: { kyc_approved: true } })
    expect(counts([dep], kyc)).toBe(false)
    expect(counts([dep, fact('kyc', 2 * DAY)], kyc)).toBe(true)
    const lots = terms({ qualify: { min_centilots: 100, within_days: 5 } })
    expect(counts([dep, fact('trade', 2 * DAY, { reference: 't1', volume: 50, valueMinor: 10 })], lots)).toBe(
      false,
    )
    expect(
      counts(
        [
          dep,
          fact('trade', 2 * DAY, { reference: 't1', volume: 50, valueMinor: 10 }),
          fact('trade', 3 * DAY, { reference: 't2', volume: 50, valueMinor: 10 }),
        ],
        lots,
      ),
    ).toBe(true)
  })
})

describe('a close rounds a period RevShare once', () => {
  const revshare: PlanTerms = { type: 'revshare', revshare_bp: 2500, hold_days: 0, sub_affiliate_bp: 0 }
  const period = (paid: number, basis: number) => ({
    affiliateId: 1,
    parentId: null,
    plan: { planId: 7, version: 2, terms: revshare },
    revshare: [{ planId: 7, version: 2, terms: revshare, currency: 'USD', basis, paid }],
    volume: 0,
    customers: 0,
    totals: new Map([['USD', paid]]),
  })

  test('what the rows still miss of the rate times the basis joins the rounding row of the period', () => {
    expect(closeRows('2026-10', [period(2, 12)])).toEqual([
      {
        affiliateId: 1,
        sourceAffiliateId: 0,
        kind: 'revshare',
        key: 'round:2026-10:7.2:USD',
        amountMinor: 1,
        currency: 'USD',
        basisMinor: 0,
        rateBp: 2500,
        planId: 7,
        planVersion: 2,
      },
    ])
    expect(closeRows('2026-10', [period(3, 12)])).toEqual([])
    // negative: rounded toward zero, as a row is
    expect(closeRows('2026-10', [period(0, -12)]).map((r) => r.amountMinor)).toEqual([-3])
  })
})
