/**
 * The open positions of one login netted per symbol and direction. Margin and floating profit are linear
 * in volume and open price (formulas.ts), so pricing a holding with its volume-weighted open price gives
 * exactly the sum over its positions, at the cost of one row per symbol instead of one per position.
 */
export interface Holding {
  symbol: string
  /** 0 buy, 1 sell. */
  cmd: number
  /** Hundredths of a lot. */
  volume: number
  /** Sum of volume * open price. */
  volumePrice: number
  /** Minor units of the account currency. */
  commission: number
  storage: number
}

interface HeldPosition {
  symbol: string
  cmd: number
  volume: number
  openPrice: number
  commission: number
  storage: number
}

/** Adds a position to a login's holdings in place (a batch of opens sees the ones before it). */
export function addHolding(holdings: Holding[], p: HeldPosition): Holding[] {
  const cmd = p.cmd % 2
  const h = holdings.find((x) => x.symbol === p.symbol && x.cmd === cmd)
  if (h) {
    h.volume += p.volume
    h.volumePrice += p.volume * p.openPrice
    h.commission += p.commission
    h.storage += p.storage
  } else
    holdings.push({
      symbol: p.symbol,
      cmd,
      volume: p.volume,
      volumePrice: p.volume * p.openPrice,
      commission: p.commission,
      storage: p.storage,
    })
  return holdings
}

/** Volume-weighted open price of a holding. */
export const averagePrice = (h: Holding) => (h.volume > 0 ? h.volumePrice / h.volume : 0)

/** Takes a position out of a login's holdings in place (the inverse of addHolding). */
export function removeHolding(holdings: Holding[], p: HeldPosition): Holding[] {
  const cmd = p.cmd % 2
  const i = holdings.findIndex((x) => x.symbol === p.symbol && x.cmd === cmd)
  if (i < 0) return holdings
  const h = holdings[i]
  h.volume -= p.volume
  h.volumePrice -= p.volume * p.openPrice
  h.commission -= p.commission
  h.storage -= p.storage
  if (h.volume <= 0) holdings.splice(i, 1)
  return holdings
}
