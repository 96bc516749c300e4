/**
 * A Map of integer keys (tickets, ids) kept in chunks of consecutive keys, for long-lived books that
 * grow to hundreds of thousands of entries and change many times a second.
 *
 * Why: the engine's garbage collector (JavaScriptCore in Bun) re-reads the whole storage of an old Map
 * written to since its last young collection, and each such pause holds every request in flight. The
 * trigger engine's book of every open position, written on every open, made young collections under
 * trade opens pause 4-5 ms at the median with 100,000-150,000 positions; 2.8 ms in chunks
 * (`BENCH_GC=1 npm run bench:trading`, bench/RESULTS.md). A write dirties one chunk of at most `2^bits`
 * entries, and new ids (consecutive) land in the same few chunks.
 */
export class ChunkedMap<V> implements Iterable<[number, V]> {
  private readonly chunks = new Map<number, Map<number, V>>()
  private count = 0
  private readonly width: number

  constructor(bits = 8) {
    this.width = 2 ** bits
  }

  private chunkOf(key: number) {
    return Math.floor(key / this.width)
  }

  get size() {
    return this.count
  }

  get(key: number): V | undefined {
    return this.chunks.get(this.chunkOf(key))?.get(key)
  }

  has(key: number) {
    return this.chunks.get(this.chunkOf(key))?.has(key) ?? false
  }

  set(key: number, value: V) {
    const c = this.chunkOf(key)
    let chunk = this.chunks.get(c)
    if (!chunk) {
      chunk = new Map()
      this.chunks.set(c, chunk)
    }
    const before = chunk.size
    chunk.set(key, value)
    this.count += chunk.size - before
    return this
  }

  delete(key: number) {
    const c = this.chunkOf(key)
    const chunk = this.chunks.get(c)
    if (!chunk?.delete(key)) return false
    this.count--
    if (chunk.size === 0) this.chunks.delete(c)
    return true
  }

  clear() {
    this.chunks.clear()
    this.count = 0
  }

  *entries(): IterableIterator<[number, V]> {
    for (const chunk of this.chunks.values()) yield* chunk.entries()
  }

  *keys(): IterableIterator<number> {
    for (const chunk of this.chunks.values()) yield* chunk.keys()
  }

  *values(): IterableIterator<V> {
    for (const chunk of this.chunks.values()) yield* chunk.values()
  }

  [Symbol.iterator]() {
    return this.entries()
  }
}
