import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { LevelBook } from './book'
import {
  type AlertSpec,
  checkSpec,
  firedThisEpisode,
  initialState,
  levelOf,
  REPEAT_REST_S,
  rearms,
  restsUntil,
  sameDefinition,
  step,
  watchChangedAt,
} from './conditions'
import { rewatch, wake } from './evaluate'

const spec = (s: Partial<AlertSpec> & { condition: number }): AlertSpec => ({
  targetPrice: 0,
  channelLow: 0,
  channelHigh: 0,
  moveThreshold: 0,
  referencePrice: 0,
  ...s,
})

/** Firings of one alert over a price path, evaluating every price (the reference semantics). */
function firings(a: AlertSpec, start: number | null, path: number[], once: boolean) {
  let s = initialState(a, start)
  const out: number[] = []
  for (const [i, p] of path.entries()) {
    const r = step(a, s, p)
    s = r.next
    if (r.fired) {
      out.push(i)
      if (once) break
    }
  }
  return out
}

describe('conditions', () => {
  test('levels of moving conditions: 1% up from 1.1 is 1.111 exactly, 0.005 down is 1.095', () => {
    expect(levelOf(spec({ condition: 7, referencePrice: 1.1, moveThreshold: 1 }))).toBe(1.111)
    expect(levelOf(spec({ condition: 8, referencePrice: 2, moveThreshold: 10 }))).toBe(1.8)
    expect(levelOf(spec({ condition: 10, referencePrice: 1.1, moveThreshold: 0.005 }))).toBe(1.095)
  })

  test('PRICE_ABOVE fires at once when already above; repeat needs a reset', () => {
    const a = spec({ condition: 0, targetPrice: 10 })
    expect(firings(a, 11, [11, 12, 9, 10, 10.5, 9.9, 10], false)).toEqual([0, 3, 6])
  })

  test('CROSS_UP needs a price below first; CROSS_ANY fires on every change of side', () => {
    const up = spec({ condition: 2, targetPrice: 10 })
    expect(firings(up, 11, [12, 9, 10], false)).toEqual([2])
    expect(firings(up, null, [10, 9, 11], false)).toEqual([2])
    const any = spec({ condition: 4, targetPrice: 10 })
    expect(firings(any, 9, [9.5, 10, 11, 9, 8, 12], false)).toEqual([1, 3, 5])
  })

  test('channel enter and exit fire on the transition only', () => {
    const enter = spec({ condition: 5, channelLow: 10, channelHigh: 12 })
    expect(firings(enter, 11, [11, 13, 12, 11, 9, 10], false)).toEqual([2, 5])
    const exit = spec({ condition: 6, channelLow: 10, channelHigh: 12 })
    expect(firings(exit, 11, [12, 12.5, 13, 11, 9.9], false)).toEqual([1, 4])
  })

  test('validation names the field (4.5)', () => {
    const has =
      (...fields: string[]) =>
      (f: string) =>
        fields.includes(f)
    expect(checkSpec(spec({ condition: 0 }), has())).toContain('target_price')
    expect(
      checkSpec(spec({ condition: 5, channelLow: 2, channelHigh: 1 }), has('channel_low', 'channel_high')),
    ).toContain('channel_low')
    expect(checkSpec(spec({ condition: 7, moveThreshold: -1 }), has('move_threshold'))).toContain(
      'move_threshold',
    )
    expect(
      checkSpec(
        spec({ condition: 7, moveThreshold: 2, targetPrice: 1 }),
        has('move_threshold', 'target_price'),
      ),
    ).toContain('target_price')
    expect(checkSpec(spec({ condition: 3, targetPrice: 1 }), has('target_price'))).toBeNull()
  })
})

describe('rest and identity of repeat alerts', () => {
  test('a repeat alert that fired rests REPEAT_REST_S from its last firing; a once or unfired one does not', () => {
    expect(REPEAT_REST_S).toBe(60)
    expect(restsUntil({ repeatMode: 1, firedCount: 2, lastFiredAt: 1000 })).toBe(1060)
    expect(restsUntil({ repeatMode: 1, firedCount: 0, lastFiredAt: 0 })).toBe(0)
    expect(restsUntil({ repeatMode: 0, firedCount: 1, lastFiredAt: 1000 })).toBe(0)
  })

  test('the same definition: what is watched, not the bookkeeping or the message', () => {
    const a = { ...spec({ condition: 0, targetPrice: 1.2 }), symbol: 'EURUSD', side: 0 }
    expect(sameDefinition(a, { ...a })).toBe(true)
    expect(sameDefinition(a, { ...a, targetPrice: 1.21 })).toBe(false)
    expect(sameDefinition(a, { ...a, side: 1 })).toBe(false)
    expect(sameDefinition(a, { ...a, condition: 2 })).toBe(false)
    expect(sameDefinition(a, { ...a, symbol: 'GBPUSD' })).toBe(false)
  })
})

describe('level books agree with evaluating every alert on every price', () => {
  const alertArb = fc.record({
    condition: fc.integer({ min: 0, max: 10 }),
    a: fc.integer({ min: 80, max: 120 }),
    b: fc.integer({ min: 1, max: 20 }),
    once: fc.boolean(),
  })
  test('same firings, in the same order, for random alerts and price paths', () => {
    fc.assert(
      fc.property(
        fc.array(alertArb, { minLength: 1, maxLength: 30 }),
        fc.integer({ min: 80, max: 120 }),
        fc.array(fc.integer({ min: 70, max: 130 }), { minLength: 1, maxLength: 60 }),
        (defs, start, path) => {
          const specs = defs.map((d) =>
            spec({
              condition: d.condition,
              targetPrice: d.a,
              channelLow: d.a,
              channelHigh: d.a + d.b,
              moveThreshold: d.condition >= 9 ? d.b : d.b / 2,
              referencePrice: d.a,
            }),
          )
          const expected = specs.map((s, i) => firings(s, start, path, defs[i].once))
          const book = new LevelBook()
          const tracked = new Map(specs.map((s, i) => [i + 1, { spec: s, state: initialState(s, start) }]))
          for (const [id, a] of tracked) rewatch(book, id, a, start)
          const got: number[][] = specs.map(() => [])
          path.forEach((p, step) => {
            for (const w of wake(book, p, (id) => tracked.get(id))) {
              const a = tracked.get(w.id)!
              if (w.fired) {
                got[w.id - 1].push(step)
                if (defs[w.id - 1].once) {
                  tracked.delete(w.id)
                  continue
                }
              }
              rewatch(book, w.id, a, p)
            }
          })
          expect(got).toEqual(expected)
        },
      ),
      { numRuns: 300 },
    )
  })
})

describe('firedThisEpisode: a reloaded repeat alert waits for its reset if it fired since its watch changed', () => {
  const T = 1_767_614_400 // epoch seconds
  const above = { ...spec({ condition: 0, targetPrice: 1.2 }), lastFiredAt: T, watchChangedAt: 0 }
  test('a level alert fired at a price in its region (at the level included); one never fired is new', () => {
    expect(firedThisEpisode({ ...above, firedCount: 1, lastPrice: 1.21 })).toBe(true)
    expect(firedThisEpisode({ ...above, firedCount: 1, lastPrice: 1.2 })).toBe(true)
    expect(firedThisEpisode({ ...above, firedCount: 0, lastFiredAt: 0, lastPrice: 0 })).toBe(false)
  })
  test('without watch_changed_at (0): its level moved past the firing price by an edit is a new alert', () => {
    expect(firedThisEpisode({ ...above, targetPrice: 1.22, firedCount: 1, lastPrice: 1.21 })).toBe(false)
  })
  test('what it watches changed after its firing (the firing price still inside): a new alert', () => {
    const fired = { ...above, firedCount: 1, lastPrice: 1.25 }
    expect(firedThisEpisode({ ...fired, targetPrice: 1.22, watchChangedAt: (T + 70) * 1000 })).toBe(false)
    // changed in the second of the firing, after it (watchChangedAt puts it just after the firing)
    const sameSecond = watchChangedAt(T * 1000 + 800, { firedCount: 1, lastFiredAt: T })
    expect(firedThisEpisode({ ...fired, watchChangedAt: sameSecond })).toBe(false)
    // fired later in the second of the change: after it
    expect(firedThisEpisode({ ...fired, watchChangedAt: watchChangedAt(T * 1000 + 200) })).toBe(true)
    expect(firedThisEpisode({ ...fired, watchChangedAt: (T - 70) * 1000 })).toBe(true)
  })
  test('moving conditions by their level; crossings and channels start afresh anyway', () => {
    const up = {
      ...spec({ condition: 9, referencePrice: 1.1, moveThreshold: 0.01 }),
      lastFiredAt: T,
      watchChangedAt: 0,
    }
    expect(firedThisEpisode({ ...up, firedCount: 2, lastPrice: 1.115 })).toBe(true)
    expect(firedThisEpisode({ ...up, firedCount: 2, lastPrice: 1.105 })).toBe(false)
    expect(
      firedThisEpisode({
        ...above,
        ...spec({ condition: 2, targetPrice: 1.2 }),
        firedCount: 1,
        lastPrice: 1.21,
      }),
    ).toBe(false)
  })
})

describe('rearms: which edits make an alert a new one', () => {
  const a = {
    ...spec({ condition: 7, referencePrice: 1.1, moveThreshold: 2 }),
    symbol: 'EURUSD',
    side: 0,
    repeatMode: 1,
    active: 1,
  }
  test('what it watches, once to repeat, an inactive one activated', () => {
    expect(rearms(a, { ...a, moveThreshold: 3 })).toBe(true)
    expect(rearms(a, { ...a, referencePrice: 1.2 })).toBe(true)
    expect(rearms(a, { ...a, side: 1 })).toBe(true)
    expect(rearms({ ...a, repeatMode: 0 }, a)).toBe(true)
    expect(rearms({ ...a, active: 0 }, a)).toBe(true)
  })
  test('not a disable, repeat to once, nor the same watch', () => {
    expect(rearms(a, { ...a, active: 0 })).toBe(false)
    expect(rearms(a, { ...a, repeatMode: 0 })).toBe(false)
    expect(rearms(a, { ...a })).toBe(false)
  })
})
