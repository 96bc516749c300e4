import type { LevelBook } from './book'
import { type AlertSpec, type AlertState, step, watches } from './conditions'

export interface Tracked {
  spec: AlertSpec
  state: AlertState
}

/**
 * One price of a book's symbol and side: the alerts whose wake-up level it reached are stepped (their state
 * updated in place) and returned with whether they fired and the state they had. The caller records
 * firings, then re-files the alerts that stay active with `rewatch`, or puts back one whose firing could
 * not be recorded with `retry`.
 */
export function wake(book: LevelBook, p: number, get: (id: number) => Tracked | undefined) {
  const out: { id: number; fired: boolean; before: AlertState; tracked: Tracked }[] = []
  for (const id of book.due(p)) {
    const a = get(id)
    if (!a) continue
    const before = a.state
    const r = step(a.spec, a.state, p)
    a.state = r.next
    out.push({ id, fired: r.fired, before, tracked: a })
  }
  return out
}

/** Wakes at any price: an alert put back this way is stepped again by the next tick, whatever it is. */
const NEXT_TICK = [{ dir: 'up' as const, level: Number.NEGATIVE_INFINITY }]

/**
 * Puts an alert back as it was before this price woke it, to be stepped again by the next tick: its firing
 * could not be written (the database away a moment), and it must not be lost until the engine reloads.
 */
export function retry(book: LevelBook, id: number, a: Tracked, before: AlertState) {
  a.state = before
  book.place(id, NEXT_TICK)
}

export const rewatch = (book: LevelBook, id: number, a: Tracked, p: number) =>
  book.place(id, watches(a.spec, a.state, p))
