import { describe, expect, test } from 'bun:test'
import { type Action, feeOf, leastPaying, next, STATUS, STATUS_NAMES, sources, statusName } from './status'

const ACTIONS: Action[] = [
  'pending',
  'confirmed',
  'failed',
  'cancelled',
  'refunded',
  'chargeback',
  'route',
  'mismatch',
  'credit',
  'credit_error',
  'give_up',
  'resolve_credit',
  'resolve_fail',
  'refund',
  'reversal',
  'expire',
  'approve',
  'reject',
  'cancel',
  'paid',
  'payout_failed',
  'payout_unknown',
]
const S = STATUS
/** Every allowed deposit move, written out: anything else must be refused (null). */
const DEPOSIT: [number, Action, number][] = [
  [S.created, 'route', S.pending_payment],
  [S.created, 'pending', S.pending_payment],
  [S.created, 'confirmed', S.provider_confirmed],
  [S.created, 'failed', S.failed],
  [S.created, 'cancelled', S.cancelled],
  [S.created, 'mismatch', S.manual_review],
  [S.created, 'reversal', S.manual_review],
  [S.pending_payment, 'confirmed', S.provider_confirmed],
  [S.pending_payment, 'failed', S.failed],
  [S.pending_payment, 'cancelled', S.cancelled],
  [S.pending_payment, 'cancel', S.cancelled],
  [S.pending_payment, 'expire', S.cancelled],
  [S.pending_payment, 'mismatch', S.manual_review],
  [S.pending_payment, 'reversal', S.manual_review],
  [S.provider_confirmed, 'credit', S.credited],
  [S.provider_confirmed, 'credit_error', S.credit_failed],
  // a refund or chargeback before the credit (was: chargeback alone, without netting what was taken back)
  [S.provider_confirmed, 'reversal', S.manual_review],
  [S.credit_failed, 'credit', S.credited],
  [S.credit_failed, 'give_up', S.manual_review],
  [S.credit_failed, 'reversal', S.manual_review],
  [S.credited, 'refunded', S.refunded],
  [S.credited, 'refund', S.refunded],
  [S.credited, 'chargeback', S.chargeback],
  [S.manual_review, 'resolve_credit', S.credited],
  [S.manual_review, 'resolve_fail', S.failed],
  [S.failed, 'confirmed', S.manual_review],
  [S.failed, 'mismatch', S.manual_review],
  [S.failed, 'reversal', S.manual_review],
  [S.cancelled, 'confirmed', S.manual_review],
  [S.cancelled, 'mismatch', S.manual_review],
  [S.cancelled, 'reversal', S.manual_review],
]
const WITHDRAWAL: [number, Action, number][] = [
  [S.created, 'route', S.pending_payment],
  [S.pending_payment, 'approve', S.provider_confirmed],
  [S.pending_payment, 'reject', S.cancelled],
  [S.pending_payment, 'cancel', S.cancelled],
  [S.provider_confirmed, 'paid', S.credited],
  [S.provider_confirmed, 'payout_failed', S.failed],
  [S.provider_confirmed, 'payout_unknown', S.manual_review],
  [S.manual_review, 'paid', S.credited],
  [S.manual_review, 'payout_failed', S.failed],
]

describe('cashier status machine (3.1)', () => {
  for (const [kind, table] of [
    ['deposit', DEPOSIT],
    ['withdrawal', WITHDRAWAL],
  ] as const)
    test(`${kind}: every status x action pair, ${STATUS_NAMES.length * ACTIONS.length} of them`, () => {
      for (let from = 0; from < STATUS_NAMES.length; from++)
        for (const a of ACTIONS) {
          const want = table.find(([f, x]) => f === from && x === a)?.[2] ?? null
          expect([statusName(from), a, next(kind, from, a) as number | null]).toEqual([
            statusName(from),
            a,
            want,
          ])
        }
    })

  test('no provider event moves a deposit back to an earlier stage, and credited is reached only by crediting', () => {
    const stage = (s: number) => [0, 1, 2, 4, 3].indexOf(s)
    for (const [from, a, to] of DEPOSIT) {
      if (stage(from) >= 0 && stage(to) >= 0) expect(stage(to)).toBeGreaterThan(stage(from))
      if (to === S.credited) expect(['credit', 'resolve_credit']).toContain(a)
    }
  })

  test('sources lists where an action may start', () => {
    expect(sources('deposit', 'confirmed').sort()).toEqual(
      [S.created, S.pending_payment, S.failed, S.cancelled].sort(),
    )
  })
})

describe('leastPaying: the smallest amount the fee leaves something of', () => {
  test('is the first amount past the fee, within the limits, or null', () => {
    expect(leastPaying(100, 10_000_000, 0, 2000)).toBe(2001)
    expect(leastPaying(5000, 10_000_000, 0, 2000)).toBe(5000)
    expect(leastPaying(1, 1500, 0, 2000)).toBe(null)
    expect(leastPaying(1, 10_000, 10_000, 0)).toBe(null)
    expect(leastPaying(1, 10_000, 0, 0)).toBe(1)
  })

  test('matches a search for any percent and fixed fee', () => {
    for (const bps of [0, 1, 99, 250, 3333, 5000])
      for (const fixed of [0, 1, 7, 150, 2000, 99_999]) {
        let a = 1
        while (a - feeOf(a, bps, fixed) <= 0) a++
        expect(leastPaying(1, 10_000_000, bps, fixed)).toBe(a)
      }
  })
})
