import { expect, test } from 'bun:test'
import { demoSymbols } from '../../src/modules/market/demo-symbols'
import { isTradingOpen } from '../../src/modules/market/domain/sessions'

const sessionsOf = (weekendTrading: boolean, symbol: string) =>
  JSON.parse(demoSymbols(0, { weekendTrading }).find((s) => s.symbol === symbol)!.sessions!)
const saturdayNoon = Date.UTC(2026, 10, 28, 12, 0)
const fridayNight = Date.UTC(2026, 10, 27, 23, 0)
const wednesday = (h: number, m: number) => Date.UTC(2026, 10, 25, h, m)

test('DEMO_WEEKEND_TRADING: the demo symbols keep their midweek hours every day, breaks included', () => {
  expect(isTradingOpen(sessionsOf(false, 'EURUSD'), saturdayNoon)).toBe(false)
  expect(isTradingOpen(sessionsOf(false, 'EURUSD'), fridayNight)).toBe(false)
  expect(isTradingOpen(sessionsOf(true, 'EURUSD'), saturdayNoon)).toBe(true)
  expect(isTradingOpen(sessionsOf(true, 'EURUSD'), fridayNight)).toBe(true)
  // the metals' daily break and the stocks' exchange day stay
  for (const weekendTrading of [false, true]) {
    expect(isTradingOpen(sessionsOf(weekendTrading, 'XAUUSD'), wednesday(21, 30))).toBe(false)
    expect(isTradingOpen(sessionsOf(weekendTrading, 'AAPL'), wednesday(12, 0))).toBe(false)
    expect(isTradingOpen(sessionsOf(weekendTrading, 'AAPL'), wednesday(15, 0))).toBe(true)
  }
  expect(isTradingOpen(sessionsOf(true, 'AAPL'), Date.UTC(2026, 10, 28, 15, 0))).toBe(true)
})
