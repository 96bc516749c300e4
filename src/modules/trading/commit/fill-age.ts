import { refuse } from '../errors'

/**
 * How old the price of a market open or a client close may be when its batch is written (ms): the bound
 * of the stale-price guard (ADR 0014 §3: no fill at a price more than 3 s old; market's STALE_AFTER_MS).
 * Its price is the quote current when its checks ran; a request that then waited for the database (sqld
 * paused, a batch ahead that did not answer, a read of its own transaction slow to answer) would otherwise
 * fill at a price the market may have left. The age is measured once per batch, after the batch's reads,
 * just before its decisions (open-commit.ts commitNew, close-commit.ts commitCloses).
 */
export const FILL_PRICE_MAX_AGE_MS = 3000

const tooOld = new WeakSet<Error>()

/** The refusal of a fill whose price was read `ms` before its batch could decide it: 503 PRICE_STALE. */
export function priceTooOld(ms: number, what: 'order' | 'close'): Error {
  const e = refuse(
    'priceStale',
    `the price of this ${what} was read ${(ms / 1000).toFixed(1)} s before it could be written (the database was slow to answer): nothing is filled at an old price, retry`,
  )
  tooOld.add(e)
  return e
}

/** The refusal is priceTooOld's: the request waited, not the position (a group close stops on it). */
export const isPriceTooOld = (e: unknown): boolean => e instanceof Error && tooOld.has(e)
