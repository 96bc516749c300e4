/**
 * The spike filter of incoming quotes (pure), as MetaTrader's symbol "filter level": a tick whose mid
 * moves further than a bound from the last accepted price is held back (not applied) unless the ticks
 * after it confirm the new level, and a spread wider than a bound is no quote at all.
 */
export interface TickFilterSettings {
  /** Largest move of the mid from the last accepted mid, in percent, a tick may make at once (0: off). */
  spikePercent: number
  /** Ticks after a held-back one, each near the one before it, that confirm its level (then applied). */
  confirmTicks: number
  /** Widest spread a tick may have, in percent of its mid (0: no bound). */
  maxSpreadPercent: number
}

/**
 * A held-back level: the mid of its latest tick, that tick's time, and how many later ticks have
 * confirmed it since the first.
 */
export interface HeldLevel {
  mid: number
  time: number
  confirmed: number
}

const movePercent = (from: number, to: number) => (Math.abs(to - from) / from) * 100

/**
 * Whether a tick of mid `mid` is applied, given the last accepted mid (null: none yet) and the level
 * held back before it: `held` is what to keep for the next tick (undefined: nothing held). A tick near
 * the last accepted price is applied and forgets a held level; one far from it is held, and the
 * `confirmTicks`-th tick that follows it near its level is applied (the price has moved: a real gap).
 */
export function filterTick(
  s: TickFilterSettings,
  last: number | null,
  held: HeldLevel | undefined,
  mid: number,
  time = 0,
): { apply: boolean; held?: HeldLevel } {
  if (s.spikePercent <= 0 || last === null || !(last > 0)) return { apply: true }
  if (movePercent(last, mid) <= s.spikePercent) return { apply: true }
  if (held && movePercent(held.mid, mid) <= s.spikePercent) {
    // a feed's retry of the same tick (or a copy in one batch), or an older one, is no new word
    if (time < held.time || (time === held.time && mid === held.mid)) return { apply: false, held }
    const confirmed = held.confirmed + 1
    return confirmed >= s.confirmTicks ? { apply: true } : { apply: false, held: { mid, time, confirmed } }
  }
  return s.confirmTicks <= 0 ? { apply: true } : { apply: false, held: { mid, time, confirmed: 0 } }
}

/** Whether a two-sided quote's spread is within the bound (percent of its mid; 0: any). */
export const spreadWithin = (maxSpreadPercent: number, bid: number, ask: number) =>
  maxSpreadPercent <= 0 || ((ask - bid) / ((ask + bid) / 2)) * 100 <= maxSpreadPercent
