import { VOLUME_MODE } from './settings'

/** What the volume of a copy depends on; money in major units of each account's currency. */
interface SizingInput {
  mode: number
  param: number
  /** The master position's volume (hundredths of a lot). */
  masterVolume: number
  master: { equity: number; balance: number }
  follower: { equity: number; balance: number }
  /** Rate converting the follower's currency into the master's (the cross rates of margin); null: none. */
  rate: number | null
  /** The subscription's limits (0: none). */
  minVolume: number
  maxVolume: number
  /** The symbol's limits for the follower's group. */
  lot: { lotMin: number; lotMax: number; lotStep: number }
}

type Sizing =
  | { ok: true; volume: number; raw: number }
  | { ok: false; reason: 'VOLUME_BELOW_MINIMUM' | 'NO_CONVERSION_RATE' | 'NO_MASTER_FUNDS'; message: string }

/**
 * The follower's volume for a master trade (DESIGN rule 2: pure):
 * - FIXED: `param` hundredths of a lot, whatever the master trades;
 * - MULTIPLIER: master volume x `param`;
 * - EQUITY_RATIO / BALANCE_RATIO: master volume x (follower's equity or balance in the master's currency
 *   / the master's) x `param`.
 * Then capped at the subscription's max_volume and the symbol's lot_max, rounded down to lot_min plus a
 * multiple of lot_step; below the subscription's min_volume or the symbol's lot_min the trade is skipped
 * (VOLUME_BELOW_MINIMUM), never rounded up: a copy is never larger than its sizing says.
 */
export function copyVolume(i: SizingInput): Sizing {
  let raw: number
  switch (i.mode) {
    case VOLUME_MODE.FIXED:
      raw = i.param
      break
    case VOLUME_MODE.MULTIPLIER:
      raw = i.masterVolume * i.param
      break
    default: {
      if (i.rate === null)
        return { ok: false, reason: 'NO_CONVERSION_RATE', message: 'no cross rate between the accounts' }
      const key = i.mode === VOLUME_MODE.EQUITY_RATIO ? 'equity' : 'balance'
      if (!(i.master[key] > 0))
        return { ok: false, reason: 'NO_MASTER_FUNDS', message: `the master's ${key} is not positive` }
      raw = (i.masterVolume * Math.max(0, i.follower[key] * i.rate) * i.param) / i.master[key]
    }
  }
  let v = raw
  if (i.maxVolume > 0) v = Math.min(v, i.maxVolume)
  v = Math.min(v, i.lot.lotMax)
  const step = i.lot.lotStep > 0 ? i.lot.lotStep : 1
  // 1e-9: 0.3 / 0.1 is 2.9999999999999996 in binary
  v = v < i.lot.lotMin ? 0 : i.lot.lotMin + Math.floor((v - i.lot.lotMin) / step + 1e-9) * step
  const floor = Math.max(i.minVolume, i.lot.lotMin)
  if (v < floor || v <= 0)
    return {
      ok: false,
      reason: 'VOLUME_BELOW_MINIMUM',
      message: `the sized volume ${round2(raw)} is below the minimum ${floor}`,
    }
  return { ok: true, volume: v, raw }
}

const round2 = (x: number) => Math.round(x * 100) / 100

/**
 * The part of a follower position to close when the master closes part of its own: the same ratio,
 * rounded down to the symbol's step, never above what is open; the whole position when what would stay
 * open is below lot_min (a remainder that could not be closed later on its own).
 */
export function partialCloseVolume(
  followerVolume: number,
  masterBefore: number,
  masterClosed: number,
  lot: { lotMin: number; lotStep: number },
): number {
  if (masterBefore <= 0 || masterClosed <= 0) return 0
  if (masterClosed >= masterBefore) return followerVolume
  const step = lot.lotStep > 0 ? lot.lotStep : 1
  const want = (followerVolume * masterClosed) / masterBefore
  const v = Math.min(followerVolume, Math.floor(want / step + 1e-9) * step)
  if (followerVolume - v < lot.lotMin) return followerVolume
  return v
}

/**
 * The direction and stops of a copy: the master's, or reversed (market trades only: BUY <-> SELL) with
 * the stops mirrored (the master's take profit is where the reversed copy loses, so it becomes the stop
 * loss, and the other way round); without SL/TP copy, none.
 */
export function copyOrder(
  master: { cmd: number; sl: number; tp: number },
  reverse: boolean,
  copyStops: boolean,
) {
  const cmd = reverse && master.cmd <= 1 ? 1 - master.cmd : master.cmd
  if (!copyStops) return { cmd, sl: 0, tp: 0 }
  return reverse && master.cmd <= 1
    ? { cmd, sl: master.tp, tp: master.sl }
    : { cmd, sl: master.sl, tp: master.tp }
}

/**
 * Slippage of a copy in points, against the follower: positive when the follower buys higher or sells
 * lower than the master filled (for a reversed copy, the follower's own direction counts).
 */
export function slippagePoints(cmd: number, masterPrice: number, followerPrice: number, digits: number) {
  const diff = cmd % 2 === 0 ? followerPrice - masterPrice : masterPrice - followerPrice
  return Math.round(diff * 10 ** digits * 10) / 10
}
