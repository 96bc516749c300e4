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

  test('fewer digits or a new tick reprices what is held; more digits do not', () => {
    const cur = { digits: 5, tickSize: 0.00001 }
    expect(gridChangeRepricing(cur, { digits: 4, tickSize: 0.0001 })).toBe('digits')
    expect(gridChangeRepricing(cur, { digits: 5, tickSize: 0.00002 })).toBe('tick_size')
    expect(gridChangeRepricing(cur, { digits: 6, tickSize: 0.00001 })).toBeNull()
    expect(gridChangeRepricing(cur, { ...cur })).toBeNull()
  })
})
