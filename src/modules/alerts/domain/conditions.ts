/**
 * Price alert conditions (spec 4.5 leaves the enumeration open). A level or moving condition describes a
 * region of prices and fires when the price is in it while armed; a crossing or channel condition is armed
 * only after a price outside its region was seen, so it fires on the transition. After a firing, repeat
 * mode re-arms only once the price has left the region again (no firing on every tick beyond a level).
 */
export const CONDITIONS = {
  PRICE_ABOVE: 0,
  PRICE_BELOW: 1,
  CROSS_UP: 2,
  CROSS_DOWN: 3,
  CROSS_ANY: 4,
  CHANNEL_ENTER: 5,
  CHANNEL_EXIT: 6,
  MOVE_UP_PERCENT: 7,
  MOVE_DOWN_PERCENT: 8,
  MOVE_UP_AMOUNT: 9,
  MOVE_DOWN_AMOUNT: 10,
} as const

export const CONDITION_NAMES = Object.fromEntries(
  Object.entries(CONDITIONS).map(([k, v]) => [v, k]),
) as Record<number, keyof typeof CONDITIONS>

export const CONDITION_DOC = [
  '0 PRICE_ABOVE: price >= target_price',
  '1 PRICE_BELOW: price <= target_price',
  '2 CROSS_UP: price reaches target_price from below (a price below it must have been seen)',
  '3 CROSS_DOWN: price reaches target_price from above',
  '4 CROSS_ANY: price crosses target_price either way',
  '5 CHANNEL_ENTER: price enters [channel_low, channel_high] from outside',
  '6 CHANNEL_EXIT: price leaves [channel_low, channel_high] from inside',
  '7 MOVE_UP_PERCENT: price >= reference_price * (1 + move_threshold / 100)',
  '8 MOVE_DOWN_PERCENT: price <= reference_price * (1 - move_threshold / 100)',
  '9 MOVE_UP_AMOUNT: price >= reference_price + move_threshold',
  '10 MOVE_DOWN_AMOUNT: price <= reference_price - move_threshold',
].join('; ')

export interface AlertSpec {
  condition: number
  targetPrice: number
  channelLow: number
  channelHigh: number
  moveThreshold: number
  referencePrice: number
}

type Kind = 'level' | 'cross' | 'channel' | 'cross_any'
const KIND: Record<number, Kind> = {
  0: 'level',
  1: 'level',
  2: 'cross',
  3: 'cross',
  4: 'cross_any',
  5: 'channel',
  6: 'channel',
  7: 'level',
  8: 'level',
  9: 'level',
  10: 'level',
}
const kindOf = (condition: number) => KIND[condition]

/** Drops binary floating-point residue (1.1 * 1.01 is 1.1110000000000002); prices have at most 8 digits. */
const clean = (x: number) => Math.round(x * 1e10) / 1e10

/** The level a level/crossing/moving condition watches (moving conditions from their reference price). */
export function levelOf(a: AlertSpec): number {
  switch (a.condition) {
    case CONDITIONS.MOVE_UP_PERCENT:
      return clean(a.referencePrice * (1 + a.moveThreshold / 100))
    case CONDITIONS.MOVE_DOWN_PERCENT:
      return clean(a.referencePrice * (1 - a.moveThreshold / 100))
    case CONDITIONS.MOVE_UP_AMOUNT:
      return clean(a.referencePrice + a.moveThreshold)
    case CONDITIONS.MOVE_DOWN_AMOUNT:
      return clean(a.referencePrice - a.moveThreshold)
    default:
      return a.targetPrice
  }
}

const firesUp = (c: number) =>
  c === CONDITIONS.PRICE_ABOVE ||
  c === CONDITIONS.CROSS_UP ||
  c === CONDITIONS.MOVE_UP_PERCENT ||
  c === CONDITIONS.MOVE_UP_AMOUNT

/** Whether price p is in the condition's region (where it fires when armed). Not used for CROSS_ANY. */
function inRegion(a: AlertSpec, p: number): boolean {
  if (a.condition === CONDITIONS.CHANNEL_ENTER) return p >= a.channelLow && p <= a.channelHigh
  if (a.condition === CONDITIONS.CHANNEL_EXIT) return p < a.channelLow || p > a.channelHigh
  const level = levelOf(a)
  return firesUp(a.condition) ? p >= level : p <= level
}

/** Validation of 4.5: the fields each condition needs; a message naming the field, or null. */
export function checkSpec(a: AlertSpec & { condition: number }, has: (f: string) => boolean): string | null {
  const kind = kindOf(a.condition)
  if (!kind) return `condition: one of 0..10 (${CONDITION_DOC})`
  const levelish = a.condition <= CONDITIONS.CROSS_ANY
  if (levelish) {
    if (!has('target_price') || !(a.targetPrice > 0))
      return 'target_price: required (> 0) for level and crossing conditions'
  } else if (has('target_price')) return 'target_price: only for level and crossing conditions'
  if (kind === 'channel') {
    if (!has('channel_low')) return 'channel_low: required (with channel_high) for channel conditions'
    if (!has('channel_high')) return 'channel_high: required (with channel_low) for channel conditions'
    if (!(a.channelLow < a.channelHigh)) return 'channel_low: must be below channel_high'
  } else if (has('channel_low')) return 'channel_low: only for channel conditions'
  else if (has('channel_high')) return 'channel_high: only for channel conditions'
  if (a.condition >= CONDITIONS.MOVE_UP_PERCENT) {
    if (!has('move_threshold') || !(a.moveThreshold > 0))
      return 'move_threshold: required, > 0, for moving conditions'
    if (a.condition === CONDITIONS.MOVE_DOWN_PERCENT && a.moveThreshold >= 100)
      return 'move_threshold: a fall of 100% or more cannot happen'
  } else if (has('move_threshold')) return 'move_threshold: only for moving conditions'
  return null
}

/** A price on the symbol's grid: rounded to its digits, as order prices are (DESIGN rule 3). */
export const roundPrice = (x: number, digits: number) => Math.round(x * 10 ** digits) / 10 ** digits

const PRICE_FIELDS = [
  ['targetPrice', 'target_price'],
  ['channelLow', 'channel_low'],
  ['channelHigh', 'channel_high'],
  ['referencePrice', 'reference_price'],
] as const

/**
 * The spec with its prices rounded to the symbol's digits. A price sent above 0 that rounds to 0 names its
 * field: no quote is ever at 0, so the alert could never be decided on it.
 */
export function onSymbolGrid<T extends AlertSpec>(a: T, digits: number): { spec: T; problem: string | null } {
  const spec = { ...a }
  for (const [k, name] of PRICE_FIELDS) {
    const v = roundPrice(a[k], digits)
    if (a[k] > 0 && !(v > 0))
      return { spec, problem: `${name}: ${a[k]} is below one point of the symbol (${10 ** -digits})` }
    ;(spec as AlertSpec)[k] = v
  }
  return { spec, problem: null }
}

/**
 * A moving condition's level must be a price a quote can have, from one point to `maxPrice`: a level
 * rounded to 0 (a fall of 99.999...%) or above the highest price would never fire, and would only hold one
 * of the active places. Checked on the rounded spec (onSymbolGrid); a message naming move_threshold, or null.
 */
export function checkReach(a: AlertSpec, digits: number, maxPrice: number): string | null {
  if (a.condition < CONDITIONS.MOVE_UP_PERCENT) return null
  const level = levelOf(a)
  // in points, with room for binary residue (0.00002 - 0.00001 is not exactly one point)
  if (level * 10 ** digits >= 1 - 1e-9 && level <= maxPrice) return null
  const percent = a.condition === CONDITIONS.MOVE_UP_PERCENT || a.condition === CONDITIONS.MOVE_DOWN_PERCENT
  const what = firesUp(a.condition) ? 'rise' : 'fall'
  return (
    `move_threshold: a ${what} of ${a.moveThreshold}${percent ? '%' : ''} from ${a.referencePrice} reaches ` +
    `${level}, which no price of the symbol can be (${10 ** -digits} to ${maxPrice})`
  )
}

/** In-memory evaluation state: `armed` for region conditions, the last side for CROSS_ANY. */
export interface AlertState {
  armed: boolean
  side: 'above' | 'below' | null
}

/** The state of a new alert given the price now (null when the symbol has no quote yet). */
export function initialState(a: AlertSpec, p: number | null): AlertState {
  const kind = kindOf(a.condition)
  if (kind === 'cross_any')
    return { armed: true, side: p === null ? null : p >= a.targetPrice ? 'above' : 'below' }
  if (kind === 'level') return { armed: true, side: null }
  return { armed: p !== null && !inRegion(a, p), side: null }
}

/**
 * The state of a repeat alert that fired before the engine (re)started: a level alert is armed only with
 * the price outside its region (no price yet: not armed, the first tick outside re-arms it), so a restart
 * does not fire again for the episode it fired for; the other kinds start as a new alert does.
 */
export function resumedState(a: AlertSpec, p: number | null): AlertState {
  if (kindOf(a.condition) !== 'level') return initialState(a, p)
  return { armed: p !== null && !inRegion(a, p), side: null }
}

/**
 * Whether a repeat alert filed again (a start, a takeover, its account enabled again) already fired for the
 * episode it is in, so it waits for its reset (resumedState) instead of starting as a new alert: it fired
 * since what it watches last changed (`watch_changed_at`, ms, set by `watchChangedAt`: a firing's
 * `last_fired_at` is in seconds), and that firing's price (`last_price`) is in the region it watches now
 * (what holds for a row whose `watch_changed_at` is 0: written before the column, or by an instance that
 * does not write it). An edit of its message or expiry changes neither; one of what it watches makes it a
 * new alert. Level and moving conditions only: the others start afresh anyway.
 */
export const firedThisEpisode = (
  a: AlertSpec & { firedCount: number; lastFiredAt: number; lastPrice: number; watchChangedAt: number },
) =>
  a.firedCount > 0 &&
  a.lastFiredAt * 1000 >= a.watchChangedAt &&
  kindOf(a.condition) === 'level' &&
  inRegion(a, a.lastPrice)

/** What of an alert decides whether an edit makes it a new one (rearms). */
type Watched = AlertSpec & { symbol: string; side: number; repeatMode: number; active: number }

/**
 * Whether an edit from `before` to `after` makes the alert a new one, as the engine files it: a change of
 * what it watches (sameDefinition), a once-alert made a repeat one, or an inactive one (fired once-alert,
 * expired, disabled) activated again (off the books, it is filed afresh). A new message or expiry, a
 * reference_time alone, a disable: the same alert (a repeat one keeps waiting for its reset).
 */
export const rearms = (before: Watched, after: Watched) =>
  !sameDefinition(before, after) ||
  (before.repeatMode === 0 && after.repeatMode === 1) ||
  (before.active !== 1 && after.active === 1)

/**
 * `watch_changed_at` (epoch ms) of an alert created or re-armed (rearms) at `nowMs`: the start of that
 * second, since a firing records only its second (`last_fired_at`): one later in the same second is
 * after the change (firedThisEpisode). A firing seen in that second (or later: another instance's clock)
 * came before the change: just after it then. No second firing can follow in it (REPEAT_REST_S).
 */
export const watchChangedAt = (nowMs: number, seen?: { firedCount: number; lastFiredAt: number }) =>
  Math.max(Math.floor(nowMs / 1000) * 1000, seen && seen.firedCount > 0 ? seen.lastFiredAt * 1000 + 1 : 0)

/** One observation: whether the alert fires at p, and its next state (repeat mode re-arms after a reset). */
export function step(a: AlertSpec, s: AlertState, p: number): { fired: boolean; next: AlertState } {
  if (kindOf(a.condition) === 'cross_any') {
    const side = p >= a.targetPrice ? 'above' : 'below'
    return { fired: s.side !== null && side !== s.side, next: { armed: true, side } }
  }
  const inside = inRegion(a, p)
  if (s.armed && inside) return { fired: true, next: { armed: false, side: null } }
  if (!s.armed && !inside) return { fired: false, next: { armed: true, side: null } }
  return { fired: false, next: s }
}

/**
 * A repeating alert fires at most once in this many seconds: a price jittering about its level would
 * otherwise fire (and notify) on every tick. A firing that falls in the rest is not taken: the alert keeps
 * the state it had and is evaluated again on the next tick, so what still holds when the rest ends fires.
 */
export const REPEAT_REST_S = 60

/** Until when (epoch seconds) a repeat alert that fired rests; 0 when it does not. */
export const restsUntil = (a: { repeatMode: number; firedCount: number; lastFiredAt: number }) =>
  a.repeatMode === 1 && a.firedCount > 0 ? a.lastFiredAt + REPEAT_REST_S : 0

/** Whether two versions of an alert watch the same thing (a firing changes none of it; a user's edit may). */
export const sameDefinition = (
  a: AlertSpec & { symbol: string; side: number },
  b: AlertSpec & { symbol: string; side: number },
) =>
  a.symbol === b.symbol &&
  a.side === b.side &&
  a.condition === b.condition &&
  a.targetPrice === b.targetPrice &&
  a.channelLow === b.channelLow &&
  a.channelHigh === b.channelHigh &&
  a.moveThreshold === b.moveThreshold &&
  a.referencePrice === b.referencePrice

export interface Watch {
  /** up: wake when price >= level; down: wake when price <= level. */
  dir: 'up' | 'down'
  level: number
}

/** The price levels at which the alert's evaluation can change, seen from price p (book entries). */
export function watches(a: AlertSpec, s: AlertState, p: number | null): Watch[] {
  const kind = kindOf(a.condition)
  if (kind === 'cross_any') {
    const L = a.targetPrice
    if (s.side === 'below') return [{ dir: 'up', level: L }]
    if (s.side === 'above') return [{ dir: 'down', level: L }]
    return [
      { dir: 'up', level: L },
      { dir: 'down', level: L },
    ]
  }
  if (kind === 'channel') {
    const lo = a.channelLow
    const hi = a.channelHigh
    if (p === null)
      return [
        { dir: 'up', level: lo },
        { dir: 'down', level: hi },
        { dir: 'down', level: lo },
        { dir: 'up', level: hi },
      ]
    if (p < lo) return [{ dir: 'up', level: lo }]
    if (p > hi) return [{ dir: 'down', level: hi }]
    return [
      { dir: 'down', level: lo },
      { dir: 'up', level: hi },
    ]
  }
  const level = levelOf(a)
  // armed: wake on entering the region; not armed: wake on leaving it
  const towardRegion = firesUp(a.condition) ? 'up' : 'down'
  const away = towardRegion === 'up' ? 'down' : 'up'
  return [{ dir: s.armed ? towardRegion : away, level }]
}
