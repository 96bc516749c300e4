import { describe, expect, test } from 'bun:test'
import { countTradingDays, RECENT_WINDOW_MS, recountDue } from './trading-days'

const MINUTE = 60_000
// 2026-11-23 00:00 UTC, a whole day of minutes
const midnight = Date.UTC(2026, 10, 23)

describe('recountDue', () => {
  test('a phase this process never counted, or counted at a time after now, is counted anew', () => {
    expect(recountDue(7, undefined, midnight)).toBe(true)
    expect(recountDue(7, midnight + MINUTE, midnight)).toBe(true)
    expect(recountDue(7, midnight, midnight)).toBe(false)
  })

  test('every count older than the recent window is done anew: a day of minutes holds every minute', () => {
    for (let id = 0; id < 1_440; id += 7) {
      expect(recountDue(id, midnight - RECENT_WINDOW_MS + 1, midnight)).toBe(true)
      expect(recountDue(id, midnight - 86_400_000, midnight)).toBe(true)
    }
  })

  test('once a day, in the first pass at or after its minute of the day (its id modulo 1,440)', () => {
    // phase 1,447 has the minute 7 (00:07 UTC)
    const id = 1_447
    const at = (m: number) => midnight + m * MINUTE
    expect(recountDue(id, at(5), at(6))).toBe(false)
    expect(recountDue(id, at(6), at(7))).toBe(true)
    expect(recountDue(id, at(7), at(8))).toBe(false)
    // a pass that skipped minutes counts it when its minute is among them
    expect(recountDue(id, at(3), at(9))).toBe(true)
    expect(recountDue(id, at(8), at(8 + 1_438))).toBe(false)
    expect(recountDue(id, at(8), at(8 + 1_439))).toBe(true)
    // seconds within the minute do not matter
    expect(recountDue(id, at(6) + 59_999, at(7) + 1)).toBe(true)
    expect(recountDue(id, at(7) + 1, at(7) + 59_000)).toBe(false)
    // a day of minutes or more holds every phase's minute
    expect(recountDue(3, at(10), at(10 + 1_440))).toBe(true)
  })

  test('phases with consecutive ids fall on consecutive minutes: a pass a minute counts a 1,440th of them', () => {
    const from = midnight + 100 * MINUTE
    const due = Array.from({ length: 14_400 }, (_, id) => id).filter((id) =>
      recountDue(id, from, from + MINUTE),
    )
    expect(due.length).toBe(10)
    expect(due.every((id) => id % 1_440 === 101)).toBe(true)
  })
})

describe('countTradingDays', () => {
  test('a recount counts every day seen, the latest last', () => {
    expect(
      countTradingDays(
        { tradingDays: 9, lastTradingDay: '2026-11-30' },
        new Set(['2026-11-20', '2026-11-22', '2026-11-21']),
        true,
      ),
    ).toEqual({ tradingDays: 3, lastTradingDay: '2026-11-22' })
    expect(countTradingDays({ tradingDays: 4, lastTradingDay: '2026-11-20' }, [], true)).toEqual({
      tradingDays: 0,
      lastTradingDay: '',
    })
  })

  test('otherwise the days after the last one counted are added, each once', () => {
    const counted = { tradingDays: 2, lastTradingDay: '2026-11-21' }
    // an old position still open, and today: today only
    expect(countTradingDays(counted, new Set(['2026-11-19', '2026-11-23']), false)).toEqual({
      tradingDays: 3,
      lastTradingDay: '2026-11-23',
    })
    // yesterday's late position and today's: both
    expect(countTradingDays(counted, new Set(['2026-11-23', '2026-11-22']), false)).toEqual({
      tradingDays: 4,
      lastTradingDay: '2026-11-23',
    })
    // nothing after the last day counted: unchanged
    expect(countTradingDays(counted, new Set(['2026-11-21', '2026-11-20']), false)).toEqual(counted)
    expect(countTradingDays({ tradingDays: 0, lastTradingDay: '' }, new Set(['2026-11-23']), false)).toEqual({
      tradingDays: 1,
      lastTradingDay: '2026-11-23',
    })
  })
})
