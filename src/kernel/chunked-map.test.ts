import { expect, test } from 'bun:test'
import fc from 'fast-check'
import { ChunkedMap } from './chunked-map'

type Op = { kind: 'set'; key: number; value: number } | { kind: 'delete'; key: number } | { kind: 'clear' }

// keys from a few neighbouring chunks (consecutive tickets), far ones, and ids past 2^32
const key = fc.oneof(
  fc.integer({ min: 0, max: 40 }),
  fc.integer({ min: 250, max: 270 }),
  fc.integer({ min: 0, max: 2_000_000 }),
  fc.integer({ min: 2 ** 32 - 20, max: 2 ** 32 + 20 }),
  fc.constant(Number.MAX_SAFE_INTEGER),
)
const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('set' as const), key, value: fc.integer() }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('delete' as const), key }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'clear' as const }) },
)

test('answers like a Map under any sequence of writes', () => {
  fc.assert(
    fc.property(fc.array(op, { maxLength: 300 }), fc.integer({ min: 0, max: 10 }), (ops, bits) => {
      const chunked = new ChunkedMap<number>(bits)
      const plain = new Map<number, number>()
      for (const o of ops) {
        if (o.kind === 'set') {
          expect(chunked.set(o.key, o.value)).toBe(chunked)
          plain.set(o.key, o.value)
        } else if (o.kind === 'delete') expect(chunked.delete(o.key)).toBe(plain.delete(o.key))
        else {
          chunked.clear()
          plain.clear()
        }
        expect(chunked.size).toBe(plain.size)
      }
      const byKey = (a: [number, number], b: [number, number]) => a[0] - b[0]
      expect([...chunked].sort(byKey)).toEqual([...plain].sort(byKey))
      expect([...chunked.keys()].sort((a, b) => a - b)).toEqual([...plain.keys()].sort((a, b) => a - b))
      expect([...chunked.values()].sort((a, b) => a - b)).toEqual([...plain.values()].sort((a, b) => a - b))
      for (const o of ops)
        if (o.kind !== 'clear') {
          expect(chunked.get(o.key)).toBe(plain.get(o.key))
          expect(chunked.has(o.key)).toBe(plain.has(o.key))
        }
    }),
  )
})

test('an entry deleted while iterating is not visited; the others are, once', () => {
  const m = new ChunkedMap<string>(2)
  for (let k = 0; k < 20; k++) m.set(k, `v${k}`)
  const seen: number[] = []
  for (const [k] of m) {
    seen.push(k)
    // the next key in its chunk, and a key of a later chunk
    m.delete(k + 1)
    if (k === 0) m.delete(17)
  }
  expect(seen).toEqual([0, 2, 4, 6, 8, 10, 12, 14, 16, 18])
  expect(m.size).toBe(10)
})
