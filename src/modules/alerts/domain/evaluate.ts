import type { LevelBook } from './book'
import { type AlertSpec, type AlertState, step, watches } from './conditions'

export interface Tracked {
  spec: AlertSpec
  state: AlertState
}

/**
 * One price of a book's symbol and side: the alerts whose wake-up level it reached are stepped (their state
 * updated in place) and returned with whether they fired. The caller records firings, then re-files the
 * alerts that stay active with `rewatch`.
 */
export function wake(book: LevelBook, p: number, get: (id: number) => Tracked | undefined) {
  const out: { id: number; fired: boolean }[] = []
  for (const id of book.due(p)) {
    const a = get(id)
    if (!a) continue
    const r = step(a.spec, a.state, p)
    a.state = r.next
    out.push({ id, fired: r.fired })
  }
  return out
}

export const rewatch = (book: LevelBook, id: number, a: Tracked, p: number) =>
  book.place(id, watches(a.spec, a.state, p))
