/** Binary searches over arrays kept sorted ascending by `level` (trigger and alert books). */

/** First index whose level is >= x. */
export function lowerBound(a: readonly { level: number }[], x: number): number {
  let lo = 0
  let hi = a.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (a[mid].level < x) lo = mid + 1
    else hi = mid
  }
  return lo
}

/** First index whose level is > x. */
export function upperBound(a: readonly { level: number }[], x: number): number {
  let lo = 0
  let hi = a.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (a[mid].level <= x) lo = mid + 1
    else hi = mid
  }
  return lo
}
