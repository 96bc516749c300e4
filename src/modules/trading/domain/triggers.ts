import { ChunkedMap } from '../../../kernel/chunked-map'
import { SortedBlocks } from '../../../kernel/sorted-blocks'
import { isBuy } from './formulas'

type TriggerKind = 'sl' | 'tp' | 'activate'
/** Which price is watched and in which direction the level is crossed. */
type BookSide = 'bidBelow' | 'bidAbove' | 'askBelow' | 'askAbove'

export interface Trigger {
  ticket: number
  kind: TriggerKind
  level: number
}

export interface TriggerSource {
  ticket: number
  cmd: number
  state: 'pending' | 'open' | string
  openPrice: number
  sl: number
  tp: number
}

/**
 * The resting triggers of an order (pure):
 * - pending: BUY_LIMIT fills when ask <= price, SELL_LIMIT when bid >= price, BUY_STOP when ask >= price,
 *   SELL_STOP when bid <= price;
 * - a BUY position closes at the bid: SL when bid <= sl, TP when bid >= tp;
 * - a SELL position closes at the ask: SL when ask >= sl, TP when ask <= tp.
 */
function triggersOf(o: TriggerSource): { side: BookSide; trigger: Trigger }[] {
  const out: { side: BookSide; trigger: Trigger }[] = []
  const t = (side: BookSide, kind: TriggerKind, level: number) =>
    out.push({ side, trigger: { ticket: o.ticket, kind, level } })
  if (o.state === 'pending') {
    const side = (['', '', 'askBelow', 'bidAbove', 'askAbove', 'bidBelow'] as const)[o.cmd]
    if (side) t(side, 'activate', o.openPrice)
  } else if (o.state === 'open') {
    if (isBuy(o.cmd)) {
      if (o.sl > 0) t('bidBelow', 'sl', o.sl)
      if (o.tp > 0) t('bidAbove', 'tp', o.tp)
    } else {
      if (o.sl > 0) t('askAbove', 'sl', o.sl)
      if (o.tp > 0) t('askBelow', 'tp', o.tp)
    }
  }
  return out
}

/** Whether a trigger is due at a quote (the definition the book must agree with). */
function isDue(side: BookSide, level: number, bid: number, ask: number): boolean {
  switch (side) {
    case 'bidBelow':
      return bid <= level
    case 'bidAbove':
      return bid >= level
    case 'askBelow':
      return ask <= level
    case 'askAbove':
      return ask >= level
  }
}

/**
 * The SL or TP of a position already crossed at this quote (SL first), or null: what the book would find
 * due on this quote (a pending order filled by a tick that is past its own SL or TP closes on that tick).
 */
export function stopDue(o: TriggerSource, bid: number, ask: number): 'sl' | 'tp' | null {
  if (o.state !== 'open') return null
  for (const { side, trigger } of triggersOf(o))
    if (trigger.kind !== 'activate' && isDue(side, trigger.level, bid, ask)) return trigger.kind
  return null
}

type SymbolBook = Record<BookSide, SortedBlocks<Trigger>>

/**
 * Resting triggers per symbol in four lists sorted by level, so a tick finds what is due with a binary
 * search and touches only due entries (never every order). Pure data structure: no I/O, no time.
 */
export class TriggerBook {
  private readonly books = new Map<string, SymbolBook>()
  private readonly byTicket = new ChunkedMap<{ symbol: string; side: BookSide; trigger: Trigger }[]>()

  /** `blockSize`: entries per block of each sorted list (kernel/sorted-blocks.ts); small in tests. */
  constructor(private readonly blockSize = 256) {}

  get size() {
    let n = 0
    for (const list of this.byTicket.values()) n += list.length
    return n
  }

  /** Replaces the triggers of an order (none when it is closed or cancelled). */
  upsert(symbol: string, o: TriggerSource) {
    this.remove(o.ticket)
    const entries = triggersOf(o)
    if (entries.length === 0) return
    let book = this.books.get(symbol)
    if (!book) {
      book = {
        bidBelow: new SortedBlocks(this.blockSize),
        bidAbove: new SortedBlocks(this.blockSize),
        askBelow: new SortedBlocks(this.blockSize),
        askAbove: new SortedBlocks(this.blockSize),
      }
      this.books.set(symbol, book)
    }
    for (const e of entries) book[e.side].insert(e.trigger)
    this.byTicket.set(
      o.ticket,
      entries.map((e) => ({ symbol, ...e })),
    )
  }

  remove(ticket: number) {
    const entries = this.byTicket.get(ticket)
    if (!entries) return
    for (const e of entries) this.books.get(e.symbol)?.[e.side].remove(e.trigger)
    this.byTicket.delete(ticket)
  }

  /** Triggers due at this quote; entries stay in the book until the caller removes or replaces them. */
  due(symbol: string, bid: number, ask: number): Trigger[] {
    const book = this.books.get(symbol)
    if (!book) return []
    const out: Trigger[] = []
    // "price <= level" books: every level >= price is due (a suffix); "price >= level": a prefix.
    book.bidBelow.pushAtLeast(bid, out)
    book.askBelow.pushAtLeast(ask, out)
    book.bidAbove.pushAtMost(bid, out)
    book.askAbove.pushAtMost(ask, out)
    return out
  }
}

/** The baseline a book replaces: test every order of the symbol on every tick. */
export function scanDue(
  orders: (TriggerSource & { symbol: string })[],
  symbol: string,
  bid: number,
  ask: number,
) {
  const out: Trigger[] = []
  for (const o of orders) {
    if (o.symbol !== symbol) continue
    for (const e of triggersOf(o)) if (isDue(e.side, e.trigger.level, bid, ask)) out.push(e.trigger)
  }
  return out
}
