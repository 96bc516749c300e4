import { type DaySessions, isTradingOpen, quoteAgeOver } from '../../market/pure'
import { isBuy, point, roundTo } from './formulas'
import { DAY_MS, dayOf } from './swap'

/** A refusal with the message the client sees (OPEN_ORDER_ERROR / INCORRECT_SL_TP). */
type Check = { ok: true } | { ok: false; message: string }
const fail = (message: string): Check => ({ ok: false, message })
const OK: Check = { ok: true }

export const CMD_NAMES = ['BUY', 'SELL', 'BUY_LIMIT', 'SELL_LIMIT', 'BUY_STOP', 'SELL_STOP'] as const
export const isPendingCmd = (cmd: number) => cmd >= 2 && cmd <= 5

/**
 * Volume in hundredths of a lot against the group's lot_min / lot_max / lot_step and, for a new order, the
 * symbol's max_volume (`symbolMax`, 0 none).
 */
export function checkVolume(
  volume: number,
  g: { lotMin: number; lotMax: number; lotStep: number },
  symbolMax = 0,
): Check {
  if (volume < g.lotMin) return fail(`volume: ${volume} is below lot_min ${g.lotMin}`)
  if (volume > g.lotMax) return fail(`volume: ${volume} is above lot_max ${g.lotMax}`)
  if (symbolMax > 0 && volume > symbolMax) return fail(`volume: ${volume} is above max_volume ${symbolMax}`)
  if (g.lotStep > 0 && (volume - g.lotMin) % g.lotStep !== 0)
    return fail(`volume: ${volume} is not lot_min ${g.lotMin} plus a multiple of lot_step ${g.lotStep}`)
  return OK
}

/**
 * A pending price must be on the correct side of the market and at least stops_level points away:
 * BUY_LIMIT below the ask, SELL_LIMIT above the bid, BUY_STOP above the ask, SELL_STOP below the bid.
 */
export function checkPendingPrice(
  cmd: number,
  price: number,
  bid: number,
  ask: number,
  stopsLevel: number,
  digits: number,
): Check {
  const gap = stopsLevel * point(digits)
  const eps = point(digits) / 2
  const ok =
    cmd === 2
      ? price <= ask - gap + eps && price < ask
      : cmd === 3
        ? price >= bid + gap - eps && price > bid
        : cmd === 4
          ? price >= ask + gap - eps && price > ask
          : cmd === 5
            ? price <= bid - gap + eps && price < bid
            : false
  if (ok) return OK
  const where = cmd === 2 || cmd === 5 ? 'below' : 'above'
  const ref = cmd === 2 || cmd === 4 ? `ask ${ask}` : `bid ${bid}`
  return fail(`open_price: a ${CMD_NAMES[cmd]} must be ${where} the ${ref} by at least ${stopsLevel} points`)
}

/**
 * SL and TP (0 = none) relative to the price a position closes at (bid for BUY, ask for SELL) or, for a
 * pending order, to its open price: a BUY's SL below and TP above, a SELL's the other way round, each at
 * least stops_level points away.
 */
export function checkStops(
  cmd: number,
  sl: number,
  tp: number,
  reference: number,
  stopsLevel: number,
  digits: number,
): Check {
  const gap = stopsLevel * point(digits)
  const eps = point(digits) / 2
  const buy = isBuy(cmd)
  const ref = roundTo(reference, digits)
  if (sl > 0) {
    const ok = buy ? sl <= ref - gap + eps && sl < ref : sl >= ref + gap - eps && sl > ref
    if (!ok) return fail(`sl: must be ${buy ? 'below' : 'above'} ${ref} by at least ${stopsLevel} points`)
  }
  if (tp > 0) {
    const ok = buy ? tp >= ref + gap - eps && tp > ref : tp <= ref - gap + eps && tp < ref
    if (!ok) return fail(`tp: must be ${buy ? 'above' : 'below'} ${ref} by at least ${stopsLevel} points`)
  }
  return OK
}

/**
 * SL and TP at the symbol's digits (levels are prices, DESIGN rule 3). A level asked that rounds to 0
 * (under half a point) is refused: 0 means no level, and the client asked for one.
 */
export function levelsAt(
  sl: number,
  tp: number,
  digits: number,
): { ok: true; sl: number; tp: number } | { ok: false; message: string } {
  const at = { sl: roundTo(sl, digits), tp: roundTo(tp, digits) }
  for (const k of ['sl', 'tp'] as const)
    if ((k === 'sl' ? sl : tp) > 0 && at[k] === 0)
      return { ok: false, message: `${k}: must be at least one point (${point(digits)}), or 0 for none` }
  return { ok: true, ...at }
}

/** Stop-out order: the position with the largest loss first (ties: oldest ticket). */
export function stopOutOrder<T extends { ticket: number; profit: number }>(positions: T[]): T[] {
  return [...positions].sort((a, b) => a.profit - b.profit || a.ticket - b.ticket)
}

/**
 * Whether a risk close (a stop-out, a watcher's close-out) may fill at a symbol's last price: there is one
 * (`seen`: when it arrived, epoch ms; null none), its session is open and it is within the symbol's
 * max_quote_age. A stale one is closed on its symbol's next tick; the positions priced fresh go first.
 */
export function riskFillable(
  info: { sessionList: DaySessions[]; maxQuoteAge: number },
  seen: number | null,
  now: number,
): boolean {
  return (
    seen !== null &&
    isTradingOpen(info.sessionList, now) &&
    quoteAgeOver(info.maxQuoteAge, seen, now) === null
  )
}

/** A symbol as a group sees it, as far as taking new positions goes. */
interface SymbolTrade {
  info: { symbol: string; trade: number; longOnly: number; sessionList: DaySessions[] }
  sec: { show: number; trade: number }
}

/**
 * Why the symbol takes no order for the group now (null: it does): hidden from the group, not tradable
 * (the symbol's `trade` 0 or the group's), or outside its trading session.
 */
export function symbolClosed(gs: SymbolTrade, groupName: string, now: number): string | null {
  const name = gs.info.symbol
  if (gs.sec.show !== 1) return `symbol ${name} is not available for group ${groupName}`
  if (gs.info.trade === 0 || gs.sec.trade !== 1)
    return `symbol ${name} is not tradable for group ${groupName}`
  if (!isTradingOpen(gs.info.sessionList, now)) return `market closed: ${name} is outside its trading session`
  return null
}

/** Why the symbol opens no new position in the direction of `cmd` (null: it does): close-only, long only. */
export function directionClosed(info: SymbolTrade['info'], cmd: number): string | null {
  if (info.trade === 1) return `symbol ${info.symbol} is close-only`
  if (info.longOnly === 1 && !isBuy(cmd)) return `symbol ${info.symbol} is long only: sell orders are refused`
  return null
}

/**
 * Whether a pending order that reached its price may become a position now: what a market order of its
 * direction would be refused for (symbolClosed, directionClosed). One that may not stays pending, as
 * placed, and fills on a tick once the symbol takes it again (or expires, or is cancelled).
 */
export const mayFill = (gs: SymbolTrade, cmd: number, now: number) =>
  symbolClosed(gs, '', now) === null && directionClosed(gs.info, cmd) === null

/**
 * Whether an SL or TP a tick reached may close its position now: only inside the symbol's session, where a
 * client's close would be taken. A quote published while it is closed (a dealer's weekend tick) closes
 * nothing; the trigger stays, and the first tick in session decides it, at that tick's price.
 */
export const stopFillable = (info: { sessionList: DaySessions[] }, now: number) =>
  isTradingOpen(info.sessionList, now)

/**
 * A pending order's expiration (epoch seconds; 0 good till cancelled). A symbol whose `gtc_pendings` is not
 * 1 keeps pending orders for the day only: one asked without an expiration gets the end of the UTC day
 * (the swap's day), one asked to outlive it is refused.
 */
export function pendingExpiration(
  gtcPendings: number,
  asked: number,
  now: number,
): { ok: true; expiration: number } | { ok: false; message: string } {
  if (gtcPendings === 1) return { ok: true, expiration: asked }
  const dayEnd = ((dayOf(now) + 1) * DAY_MS) / 1000
  if (asked > dayEnd)
    return {
      ok: false,
      message: `expiration: the symbol keeps pending orders for the day only (gtc_pendings 0): at most ${dayEnd}`,
    }
  return { ok: true, expiration: asked || dayEnd }
}
