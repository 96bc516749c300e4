import { expect, test } from 'bun:test'
import fc from 'fast-check'
import { lowerBound, upperBound } from './sorted'
import { SortedBlocks } from './sorted-blocks'

interface Entry {
  level: number
  id: number
}
type Op = { kind: 'insert'; level: number } | { kind: 'remove'; pick: number } | { kind: 'removeGone' }

// few distinct levels, so runs of equal levels cross block boundaries
const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({ kind: fc.constant('insert' as const), level: fc.integer({ min: 0, max: 12 }) }),
  },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('remove' as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'removeGone' as const }) },
)

test('holds what one sorted array holds, in the same order, under any inserts and removals', () => {
  fc.assert(
    fc.property(
      fc.array(op, { minLength: 20, maxLength: 400, size: 'max' }),
      fc.integer({ min: 1, max: 6 }),
      fc.integer({ min: -1, max: 13 }),
      (ops, blockSize, x) => {
        const blocks = new SortedBlocks<Entry>(blockSize)
        // the reference: one array, inserts at the upper bound (after equal levels), removal by identity
        const plain: Entry[] = []
        let id = 0
        for (const o of ops) {
          if (o.kind === 'insert') {
            const e = { level: o.level, id: id++ }
            blocks.insert(e)
            plain.splice(upperBound(plain, e.level), 0, e)
          } else if (o.kind === 'remove' && plain.length > 0) {
            const e = plain[o.pick % plain.length]
            expect(blocks.remove(e)).toBe(true)
            plain.splice(plain.indexOf(e), 1)
            expect(blocks.remove(e)).toBe(false)
          } else expect(blocks.remove({ level: 5, id: -1 })).toBe(false)
          expect(blocks.length).toBe(plain.length)
        }
        expect([...blocks]).toEqual(plain)
        const atLeast: Entry[] = []
        blocks.pushAtLeast(x, atLeast)
        expect(atLeast).toEqual(plain.slice(lowerBound(plain, x)))
        const atMost: Entry[] = []
        blocks.pushAtMost(x, atMost)
        expect(atMost).toEqual(plain.slice(0, upperBound(plain, x)))
      },
    ),
    { numRuns: 500 },
  )
})

test('an empty list answers nothing', () => {
  const blocks = new SortedBlocks<Entry>()
  const out: Entry[] = []
  blocks.pushAtLeast(0, out)
  blocks.pushAtMost(100, out)
  expect(out).toEqual([])
  expect(blocks.remove({ level: 1, id: 1 })).toBe(false)
})
