import { describe, expect, test } from 'bun:test'
import { gridChangeRepricing, tickFitsDigits } from '../../src/modules/market/domain/tick-grid'

describe('a symbol price grid', () => {
  test('tick_size is a whole number of points, at least one', () => {
    expect(tickFitsDigits(0.00001, 5)).toBe(true)
    expect(tickFitsDigits(0.3, 5)).toBe(true)
    expect(tickFitsDigits(0.001, 3)).toBe(true)
    expect(tickFitsDigits(0.25, 2)).toBe(true)
    expect(tickFitsDigits(5, 0)).toBe(true)
    expect(tickFitsDigits(0.00001, 0)).toBe(false)
    expect(tickFitsDigits(0.3, 0)).toBe(false)
    expect(tickFitsDigits(0.000015, 5)).toBe(false)
    expect(tickFitsDigits(0.000001, 5)).toBe(false)
  })

  // (99c49c5 let more digits through, "prices only get finer": a point is also the unit of spreads and
  // group overrides, so more digits reprice too; and a tick_size only matters where tick_value / tick_size is read)
  const forex = { digits: 5, tickSize: 0.00001, tickValue: 1, profitMode: 0, marginMode: 0 }
  const futures = { ...forex, profitMode: 2 }
  const cfdIndex = { ...forex, marginMode: 3 }

  test('any new digits reprices what is held, fewer or more', () => {
    expect(gridChangeRepricing(forex, { ...forex, digits: 4, tickSize: 0.0001 })).toBe('digits')
    expect(gridChangeRepricing(forex, { ...forex, digits: 6 })).toBe('digits')
    expect(gridChangeRepricing(futures, { ...futures, digits: 6, tickSize: 0.00002 })).toBe('digits')
    expect(gridChangeRepricing(forex, { ...forex })).toBeNull()
  })

  test('a new tick_value / tick_size ratio reprices futures profit and CFD-index margin only', () => {
    expect(gridChangeRepricing(forex, { ...forex, tickSize: 0.00002 })).toBeNull()
    expect(gridChangeRepricing(forex, { ...forex, tickValue: 3 })).toBeNull()
    for (const s of [futures, cfdIndex]) {
      expect(gridChangeRepricing(s, { ...s, tickSize: 0.00002 })).toBe('tick_size')
      expect(gridChangeRepricing(s, { ...s, tickValue: 2 })).toBe('tick_value')
      expect(gridChangeRepricing(s, { ...s, tickSize: 0.00002, tickValue: 3 })).toBe('tick_size')
      // the same ratio: profit and margin per price move unchanged
      expect(gridChangeRepricing(s, { ...s, tickSize: 0.00002, tickValue: 2 })).toBeNull()
      expect(
        gridChangeRepricing({ ...s, tickSize: 0.1, tickValue: 0.3 }, { ...s, tickSize: 0.3, tickValue: 0.9 }),
      ).toBeNull()
    }
  })

  test('a mode change sets the ratio of its new formula: not judged as a change of the old one', () => {
    expect(gridChangeRepricing(forex, { ...futures, tickValue: 5 })).toBeNull()
    expect(gridChangeRepricing(futures, { ...forex, tickValue: 5 })).toBeNull()
    expect(gridChangeRepricing(futures, { ...cfdIndex, tickValue: 5 })).toBeNull()
    expect(gridChangeRepricing(futures, { ...futures, marginMode: 3, tickValue: 5 })).toBe('tick_value')
  })
})
