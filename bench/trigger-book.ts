// Inserts into and removals from a trigger book's sorted levels (kernel/sorted-blocks.ts) against one
// sorted array, at 100,000 and 200,000 resting levels on one side of one symbol: what an open or a close
// with a stop loss or a take profit pays for the levels already resting. No server; run it pinned, e.g.
// `taskset -c 0 bun bench/trigger-book.ts`.
import { lowerBound, upperBound } from '../src/kernel/sorted'
import { SortedBlocks } from '../src/kernel/sorted-blocks'

interface Level {
  level: number
  ticket: number
}
const SIZES = [100_000, 200_000]

function run(kind: 'array' | 'blocks') {
  const array: Level[] = []
  const blocks = new SortedBlocks<Level>()
  const insert = (e: Level) =>
    kind === 'array' ? array.splice(upperBound(array, e.level), 0, e) : blocks.insert(e)
  const remove = (e: Level) => {
    if (kind === 'blocks') return blocks.remove(e)
    let i = lowerBound(array, e.level)
    while (array[i] !== e) i++
    array.splice(i, 1)
  }
  const inserts: number[] = []
  const removed: Level[] = []
  let ticket = 0
  let t = performance.now()
  for (const size of SIZES) {
    const from = ticket
    for (; ticket < size; ticket++) {
      const e = { level: 1 + Math.random() * 0.1, ticket }
      insert(e)
      if (ticket % 2 === 0) removed.push(e)
    }
    const now = performance.now()
    inserts.push(((now - t) * 1000) / (size - from))
    t = now
  }
  t = performance.now()
  for (const e of removed) remove(e)
  return { inserts, removal: ((performance.now() - t) * 1000) / removed.length }
}

const array = run('array')
const blocks = run('blocks')
for (const [i, size] of SIZES.entries())
  console.log(
    `insert up to ${size} levels: array ${array.inserts[i].toFixed(2)} µs, blocks ${blocks.inserts[i].toFixed(2)} µs (${(array.inserts[i] / blocks.inserts[i]).toFixed(1)}x)`,
  )
console.log(
  `removal from ${SIZES.at(-1)} levels: array ${array.removal.toFixed(2)} µs, blocks ${blocks.removal.toFixed(2)} µs (${(array.removal / blocks.removal).toFixed(1)}x)`,
)
