import { lowerBound, upperBound } from './sorted'

/**
 * A list kept sorted ascending by `level`, stored as blocks of at most `2 * blockSize` entries (equal
 * levels keep their insertion order), for books of resting levels that grow large and change often.
 *
 * Why not one sorted array: an insert or a removal moves every entry after it. At 200,000 resting levels
 * on one side of a symbol that was 7-8 µs per insert and per removal, paid by every open and close with a
 * stop loss or a take profit (`npm run bench:trigger-book`: 0.7-0.9 µs here). A write moves one block.
 */
export class SortedBlocks<T extends { level: number }> {
  private blocks: T[][] = []
  private count = 0

  constructor(private readonly blockSize = 256) {}

  get length() {
    return this.count
  }

  /** The first block whose last level is >= x (or > x with `after`); blocks.length when none. */
  private blockAt(x: number, after: boolean) {
    const blocks = this.blocks
    let lo = 0
    let hi = blocks.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      const last = blocks[mid][blocks[mid].length - 1].level
      if (after ? last <= x : last < x) lo = mid + 1
      else hi = mid
    }
    return lo
  }

  /** Inserts after every entry of the same level. */
  insert(item: T) {
    this.count++
    if (this.blocks.length === 0) {
      this.blocks.push([item])
      return
    }
    const i = Math.min(this.blockAt(item.level, true), this.blocks.length - 1)
    const block = this.blocks[i]
    block.splice(upperBound(block, item.level), 0, item)
    if (block.length > 2 * this.blockSize) this.blocks.splice(i + 1, 0, block.splice(this.blockSize))
  }

  /** Removes this very entry (compared by identity); false when it is not in the list. */
  remove(item: T): boolean {
    for (let i = this.blockAt(item.level, false); i < this.blocks.length; i++) {
      const block = this.blocks[i]
      for (let j = lowerBound(block, item.level); j < block.length; j++) {
        if (block[j].level !== item.level) return false
        if (block[j] !== item) continue
        block.splice(j, 1)
        this.count--
        this.compact(i)
        return true
      }
    }
    return false
  }

  /** Drops an emptied block, or merges a small one into its successor when both fit in one. */
  private compact(i: number) {
    const block = this.blocks[i]
    if (block.length === 0) {
      this.blocks.splice(i, 1)
      return
    }
    const next = this.blocks[i + 1]
    if (next && block.length + next.length <= this.blockSize) {
      block.push(...next)
      this.blocks.splice(i + 1, 1)
    }
  }

  /** Appends every entry whose level is >= x to `out`, in order. */
  pushAtLeast(x: number, out: T[]) {
    // most quotes leave every level untouched: the highest one says so
    const top = this.blocks[this.blocks.length - 1]
    if (top === undefined || top[top.length - 1].level < x) return
    const i = this.blockAt(x, false)
    if (i === this.blocks.length) return
    const first = this.blocks[i]
    for (let j = lowerBound(first, x); j < first.length; j++) out.push(first[j])
    for (let k = i + 1; k < this.blocks.length; k++) for (const e of this.blocks[k]) out.push(e)
  }

  /** Appends every entry whose level is <= x to `out`, in order. */
  pushAtMost(x: number, out: T[]) {
    const bottom = this.blocks[0]
    if (bottom === undefined || bottom[0].level > x) return
    for (const block of this.blocks) {
      if (block[block.length - 1].level <= x) {
        for (const e of block) out.push(e)
        continue
      }
      for (let j = 0, end = upperBound(block, x); j < end; j++) out.push(block[j])
      return
    }
  }

  /** Every entry, in order. */
  *[Symbol.iterator]() {
    for (const block of this.blocks) yield* block
  }
}
