// Copy trading's pure rules (src/modules/copytrade/domain): each with a worked example whose comment
// shows the arithmetic.
import { describe, expect, test } from 'bun:test'
import {
  equityStopReached,
  flowShare,
  hwmAfterDeposit,
  hwmAfterWithdrawal,
  managementFee,
  performanceFee,
} from './fees'
import { convertMinor, profitShare, RewardPolicy, subscriptionFee, volumeRebate } from './rewards'
import { followerModeAllowed, SubscriptionSettings, symbolAllowed } from './settings'
import { copyOrder, copyVolume, partialCloseVolume, slippagePoints } from './sizing'
import { afterClosedTrade, statsView } from './stats'
import { nextStatus, SUB_STATUS } from './status'

const lot = { lotMin: 1, lotMax: 10_000, lotStep: 1 }
const base = {
  param: 1,
  masterVolume: 100,
  master: { equity: 11_000, balance: 10_000 },
  follower: { equity: 5_000, balance: 4_000 },
  rate: 1,
  minVolume: 0,
  maxVolume: 0,
  lot,
}

describe('volume sizing', () => {
  test('FIXED takes its volume whatever the master trades', () => {
    expect(copyVolume({ ...base, mode: 0, param: 7 })).toMatchObject({ ok: true, volume: 7 })
  })
  test('MULTIPLIER: 100 x 0.35 = 35; with lot_step 10 from lot_min 10: 10 + floor(25/10)*10 = 30', () => {
    expect(copyVolume({ ...base, mode: 1, param: 0.35 })).toMatchObject({ volume: 35 })
    expect(
      copyVolume({ ...base, mode: 1, param: 0.35, lot: { lotMin: 10, lotMax: 1000, lotStep: 10 } }),
    ).toMatchObject({
      volume: 30,
    })
  })
  test('EQUITY_RATIO across currencies: EUR 5,000 x 1.10 = USD 5,500; 100 x 5,500 / 11,000 = 50', () => {
    expect(copyVolume({ ...base, mode: 2, rate: 1.1 })).toMatchObject({ ok: true, volume: 50 })
    // a factor of 2 on the ratio: 100
    expect(copyVolume({ ...base, mode: 2, rate: 1.1, param: 2 })).toMatchObject({ volume: 100 })
  })
  test('BALANCE_RATIO: 100 x 4,000 / 10,000 = 40, capped by max_volume 25 and then by lot_max 20', () => {
    expect(copyVolume({ ...base, mode: 3 })).toMatchObject({ volume: 40 })
    expect(copyVolume({ ...base, mode: 3, maxVolume: 25 })).toMatchObject({ volume: 25 })
    expect(copyVolume({ ...base, mode: 3, maxVolume: 25, lot: { ...lot, lotMax: 20 } })).toMatchObject({
      volume: 20,
    })
  })
  test('below min_volume or lot_min it is skipped, never rounded up; no cross rate or no master funds skip too', () => {
    // 100 x 0.004 = 0.4 hundredths: below lot_min 1
    expect(copyVolume({ ...base, mode: 1, param: 0.004 })).toMatchObject({
      ok: false,
      reason: 'VOLUME_BELOW_MINIMUM',
    })
    // 35 < min_volume 50
    expect(copyVolume({ ...base, mode: 1, param: 0.35, minVolume: 50 })).toMatchObject({
      reason: 'VOLUME_BELOW_MINIMUM',
    })
    expect(copyVolume({ ...base, mode: 2, rate: null })).toMatchObject({ reason: 'NO_CONVERSION_RATE' })
    expect(copyVolume({ ...base, mode: 2, master: { equity: 0, balance: 0 } })).toMatchObject({
      reason: 'NO_MASTER_FUNDS',
    })
  })
  test('0.3 / 0.1 is not 2.9999 steps: 0.3 lots with step 0.1 stays 0.3', () => {
    expect(
      copyVolume({ ...base, mode: 1, masterVolume: 30, lot: { lotMin: 10, lotMax: 1000, lotStep: 10 } }),
    ).toMatchObject({
      volume: 30,
    })
  })
})

describe('partial close, reverse, slippage', () => {
  test('the master closes 3 of 10: the follower closes 30 % of 7 = 2.1, down to 2; never above what is open', () => {
    expect(partialCloseVolume(7, 10, 3, lot)).toBe(2)
    expect(partialCloseVolume(7, 10, 10, lot)).toBe(7)
    expect(partialCloseVolume(7, 10, 12, lot)).toBe(7)
    // step 5 from lot_min 5: 30 % of 20 = 6 -> 5; 15 stays
    expect(partialCloseVolume(20, 10, 3, { lotMin: 5, lotStep: 5 })).toBe(5)
    // what would stay (20 - 15 = 5... 9 - 8 = 1) below lot_min 2 closes the whole position
    expect(partialCloseVolume(9, 10, 9, { lotMin: 2, lotStep: 1 })).toBe(9)
  })
  test('a reversed BUY becomes a SELL whose stop loss is the master take profit and the other way round', () => {
    expect(copyOrder({ cmd: 0, sl: 1.09, tp: 1.12 }, true, true)).toEqual({ cmd: 1, sl: 1.12, tp: 1.09 })
    expect(copyOrder({ cmd: 1, sl: 1.12, tp: 1.09 }, false, true)).toEqual({ cmd: 1, sl: 1.12, tp: 1.09 })
    expect(copyOrder({ cmd: 0, sl: 1.09, tp: 1.12 }, true, false)).toEqual({ cmd: 1, sl: 0, tp: 0 })
  })
  test('slippage in points against the follower: buying 1.10025 after the master filled 1.10020 is +5 points', () => {
    expect(slippagePoints(0, 1.1002, 1.10025, 5)).toBe(5)
    expect(slippagePoints(1, 1.1002, 1.10025, 5)).toBe(-5)
  })
})

describe('rewards', () => {
  test('PROFIT_SHARE_PER_TRADE: 20 % of a net 12.34 is 2.46 (rounded down); nothing on a loss', () => {
    expect(profitShare(1234, 20)).toBe(246)
    expect(profitShare(-500, 20)).toBe(0)
  })
  test('VOLUME_REBATE: 0.50 lots x 7 USD x 0.9 (USD->EUR) = 3.15 EUR = 315 cents', () => {
    expect(volumeRebate(50, 7, 0.9, 2)).toBe(315)
  })
  test('SUBSCRIPTION_FEE: 29.99 USD at 1.0 = 2,999 cents; in JPY (0 decimals) at 150.5: 4,513 yen', () => {
    expect(subscriptionFee(29.99, 1, 2)).toBe(2999)
    expect(subscriptionFee(29.99, 150.5, 0)).toBe(4513)
  })
  test('the payout account in another currency: 246 EUR cents at 1.1 = 270 USD cents (rounded down)', () => {
    expect(convertMinor(246, 1.1, 2, 2)).toBe(270)
  })
  test('PERFORMANCE_FEE_HWM: equity 11,000.00 over a mark of 10,000.00 at 20 % is 200.00; the mark moves to 10,800.00', () => {
    expect(performanceFee(1_100_000, 1_000_000, 20)).toEqual({ fee: 20_000, hwm: 1_080_000 })
    // below the mark: nothing, the mark stays
    expect(performanceFee(990_000, 1_080_000, 20)).toEqual({ fee: 0, hwm: 1_080_000 })
    // a deposit of 1,000.00 raises the mark to 11,800.00: new money is not performance
    expect(hwmAfterDeposit(1_080_000, 100_000)).toBe(1_180_000)
    // taking out 2,950.00 of an equity of 11,800.00 (a quarter) takes a quarter of the mark: 8,850.00
    expect(hwmAfterWithdrawal(1_180_000, 1_180_000, 295_000)).toBe(885_000)
  })
  test("a flow's part of a subscription: its share of the balance before it, never more out than it manages", () => {
    // 1,000.00 of 10,000.00: a tenth of 5,000.00 either way
    expect(flowShare(500_000, 100_000, 1_000_000, 1, true)).toBe(50_000)
    expect(flowShare(500_000, 100_000, 1_000_000, 1, false)).toBe(50_000)
    // the whole balance: the whole flow
    expect(flowShare(500_000, 1_000_000, 1_000_000, 1, false)).toBe(500_000)
    // a chargeback beyond the balance takes what the subscription manages, no more
    expect(flowShare(2_000_000, 100_000, 1_000_000, 1, true)).toBe(100_000)
    // an emptied account: a deposit split among its subscriptions, nothing to take out
    expect(flowShare(300_000, 0, 0, 2, false)).toBe(150_000)
    expect(flowShare(300_000, 0, 0, 2, true)).toBe(0)
  })
  test('MANAGEMENT_FEE: 2 % a year on 10,000.00 for one day = 10,000 x 0.02 / 365 = 0.547..., rounded down 0.54', () => {
    expect(managementFee(1_000_000, 2, 1)).toBe(54)
    expect(managementFee(1_000_000, 2, 365)).toBe(20_000)
    expect(managementFee(-5, 2, 1)).toBe(0)
  })
  test('the reward policy takes the parameters of its type only', () => {
    expect(RewardPolicy.safeParse({ reward_type: 3, percent: 20 }).success).toBe(true)
    expect(RewardPolicy.safeParse({ reward_type: 3, percent: 20, amount: 1 }).success).toBe(false)
    expect(RewardPolicy.safeParse({ reward_type: 0, amount: 10 }).success).toBe(false)
    expect(RewardPolicy.safeParse({ reward_type: 4, annual_percent: 101 }).success).toBe(false)
  })
  test('the equity stop: a loss of 500.00 of 10,000.00 reaches 5 % and an amount of 500; not 6 %', () => {
    expect(equityStopReached(1_000_000, 950_000, 5, 1, 2)).toBe(true)
    expect(equityStopReached(1_000_000, 950_000, 500, 0, 2)).toBe(true)
    expect(equityStopReached(1_000_000, 950_000, 6, 1, 2)).toBe(false)
    expect(equityStopReached(1_000_000, 500_000, 0, 1, 2)).toBe(false)
  })
})

describe('statistics', () => {
  test('ROI is time-weighted: +500 on 10,000 then -1,050 on 10,500 is 1.05 x 0.90 = 0.945, ROI -5.5 %; drawdown 10 %', () => {
    const s0 = { trades: 0, wins: 0, pnlMinor: 0, volume: 0, unitValue: 1, peakUnitValue: 1, maxDrawdown: 0 }
    const s1 = afterClosedTrade(s0, 50_000, 10, 1_050_000)
    expect(s1.unitValue).toBeCloseTo(1.05, 12)
    // a deposit of 5,000 between the trades changes the balance, not the index: -1,050 on 15,500
    const s2 = afterClosedTrade(s1, -105_000, 10, 1_445_000)
    expect(s2.unitValue).toBeCloseTo(1.05 * (1 - 1050 / 15_500), 12)
    const s3 = afterClosedTrade(s1, -105_000, 10, 945_000)
    expect(s3.unitValue).toBeCloseTo(0.945, 12)
    expect(s3.maxDrawdown).toBeCloseTo(0.1, 12)
    expect(statsView(s3, 2)).toEqual({
      roi: -0.055,
      pnl: -550,
      win_rate: 0.5,
      max_drawdown: 0.1,
      avg_pnl_per_trade: -275,
      trades: 2,
      winning_trades: 1,
      losing_trades: 1,
    })
  })
})

describe('settings and the status table', () => {
  test('defaults, and each refusal names its field', () => {
    expect(SubscriptionSettings.parse({})).toMatchObject({
      copy_mode: 0,
      volume_mode: 1,
      volume_param: 1,
      open_ttl_seconds: 60,
    })
    const bad = (x: object) => SubscriptionSettings.safeParse(x).error?.issues[0]?.path.join('.')
    expect(bad({ min_volume: 10, max_volume: 5 })).toBe('min_volume')
    expect(bad({ symbols_mode: 1 })).toBe('symbols')
    expect(bad({ volume_mode: 0, volume_param: 0.5 })).toBe('volume_param')
    expect(bad({ equity_stop_type: 1, equity_stop: 120 })).toBe('equity_stop')
    expect(bad({ surprise: 1 })).toBe('')
    expect(symbolAllowed({ symbols_mode: 1, symbols: ['EURUSD'] }, 'EURUSD')).toBe(true)
    expect(symbolAllowed({ symbols_mode: 2, symbols: ['EURUSD'] }, 'EURUSD')).toBe(false)
    expect(followerModeAllowed(0, 'DEMO')).toBe(false)
    expect(followerModeAllowed(1, 'DEMO')).toBe(true)
    expect(followerModeAllowed(2, 'REAL')).toBe(true)
  })
  test('every cell of the table (domain/status.ts)', () => {
    const { ACTIVE: A, PAUSED: P, DISABLED: D } = SUB_STATUS
    const table = {
      pause: [P, null, null],
      resume: [null, A, null],
      disable: [D, D, null],
      // a paused subscription's equity stop still closes the copies it holds; it stays PAUSED
      equity_stop: [P, P, null],
      master_gone: [D, D, null],
    } as const
    for (const [action, row] of Object.entries(table))
      for (const from of [A, P, D])
        expect([action, from, nextStatus(from, action as 'pause')]).toEqual([action, from, row[from]])
  })
})
