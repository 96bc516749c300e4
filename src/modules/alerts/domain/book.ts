import { lowerBound, upperBound } from '../../../kernel/sorted'
import type { Watch } from './conditions'

interface Entry {
  level: number
  id: number
}

/**
 * Wake-up levels of the alerts of one symbol and price side, in two sorted arrays: `up` entries wake when
 * the price rises to their level, `down` entries when it falls to it. A tick takes the due entries off the
 * ends it moved over (binary search, no scan of the other alerts).
 */
export class LevelBook {
  private readonly up: Entry[] = []
  private readonly down: Entry[] = []
  private readonly byId = new Map<number, Watch[]>()

  get size() {
    return this.byId.size
  }

  has(id: number) {
    return this.byId.has(id)
  }

  place(id: number, watches: Watch[]) {
    this.remove(id)
    this.byId.set(id, watches)
    for (const w of watches) {
      const arr = w.dir === 'up' ? this.up : this.down
      arr.splice(lowerBound(arr, w.level), 0, { level: w.level, id })
    }
  }

  remove(id: number) {
    const ws = this.byId.get(id)
    if (!ws) return
    this.byId.delete(id)
    for (const w of ws) {
      const arr = w.dir === 'up' ? this.up : this.down
      for (let i = lowerBound(arr, w.level); i < arr.length && arr[i].level === w.level; i++)
        if (arr[i].id === id) {
          arr.splice(i, 1)
          break
        }
    }
  }

  /** Ids whose wake-up level the price p has reached (each once), removed from the book. */
  due(p: number): number[] {
    const ids = new Set<number>()
    // up entries with level <= p are the prefix; down entries with level >= p the suffix
    const u = upperBound(this.up, p)
    for (let i = 0; i < u; i++) ids.add(this.up[i].id)
    const d = lowerBound(this.down, p)
    for (let i = d; i < this.down.length; i++) ids.add(this.down[i].id)
    for (const id of ids) this.remove(id)
    return [...ids]
  }
}
