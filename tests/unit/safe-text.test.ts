import { expect, test } from 'bun:test'
import { ApiError } from '../../src/kernel/http/errors'
import { MAX_BODY_DEPTH, refuseUnsafeText } from '../../src/kernel/http/safe-text'

const refusal = (value: unknown) => {
  try {
    refuseUnsafeText(value)
    return null
  } catch (e) {
    return e instanceof ApiError ? `${e.status} ${e.code} ${e.message}` : String(e)
  }
}

const nested = (levels: number) => {
  let v: unknown = 1
  for (let i = 0; i < levels; i++) v = { a: v }
  return v
}

test('a body nests up to MAX_BODY_DEPTH levels; deeper is 400 INVALID_DATA naming where, at any depth', () => {
  expect(refusal(nested(MAX_BODY_DEPTH))).toBeNull()
  expect(refusal(nested(MAX_BODY_DEPTH + 1))).toStartWith(
    `400 INVALID_DATA ${'a.'.repeat(MAX_BODY_DEPTH - 1)}a: nested`,
  )
  // 10,000 levels answered 500 at the edge (a Worker's stack): refused before any deep walk now
  expect(refusal(nested(10_000))).toStartWith('400 INVALID_DATA a.a.')
  expect(refusal({ rows: [[[{ x: 'ok' }]]] })).toBeNull()
})

test('control and bidirectional-override characters are refused in values and keys, naming the field', () => {
  expect(refusal({ name: 'txt\u202Eexe' })).toBe(
    '400 INVALID_DATA name: control or bidirectional-override characters are not allowed',
  )
  expect(refusal({ tags: ['ok', 'a\u0000'] })).toStartWith('400 INVALID_DATA tags.1:')
  expect(refusal({ 'k\u0007': 1 })).toStartWith('400 INVALID_DATA k\u0007:')
  expect(refusal({ text: 'שלום \u200F ok\ttab\nline' })).toBeNull()
})

test('a lone UTF-16 surrogate is refused in values, keys and file names; a pair is text', () => {
  for (const s of ['a\ud800b', 'c\udfffd', '\udc00\ud800', 'x\ud83d'])
    expect(refusal({ title: s })).toBe(
      '400 INVALID_DATA title: not well-formed text (a lone UTF-16 surrogate such as \\ud800)',
    )
  expect(refusal({ rows: [{ 'k\udc00': 1 }] })).toStartWith(
    '400 INVALID_DATA rows.0.k\udc00: not well-formed',
  )
  expect(refusal({ file: new File(['x'], 'a\ud800.png') })).toBe(
    '400 INVALID_DATA file: the file name is not well-formed text (a lone UTF-16 surrogate such as \\ud800)',
  )
  expect(refusal({ name: 'rocket 🚀', text: '𝔘𝔫𝔦𝔠𝔬𝔡𝔢 \u00e9' })).toBeNull()
})
