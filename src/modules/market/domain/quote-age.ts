/**
 * How old a quote is, in whole seconds, when that is past the symbol's limit (`maxAge` seconds; 0 none),
 * else null: `seen` is when it arrived (epoch ms, QuoteHub.seenAt). One from ahead of the clock is not old.
 */
export function quoteAgeOver(maxAge: number, seen: number, now: number): number | null {
  if (maxAge <= 0) return null
  const age = now - seen
  return age > maxAge * 1000 ? Math.floor(age / 1000) : null
}
