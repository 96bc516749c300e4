import { expect, test } from 'bun:test'
import { isRefused } from '../../src/kernel/http/errors'
import { mergeResponses, Refusal, refusals } from '../../src/kernel/refusal'

const SAMPLE = refusals({
  notFound: { status: 404, code: 'THING_ERROR' },
  notYours: { status: 403, code: 'THING_ERROR' },
  busy: { status: 503, code: 'BUSY' },
})

test('a refusal names a kind; its table gives the code and the status, a code may serve several kinds', () => {
  const r = SAMPLE.refuse('notYours', 'thing 7 belongs to another user')
  expect(r).toBeInstanceOf(Refusal)
  expect([r.kind, r.code, r.status, r.message]).toEqual([
    'notYours',
    'THING_ERROR',
    403,
    'thing 7 belongs to another user',
  ])
  expect(isRefused(r)).toBe(true)
  expect(isRefused(new Error('a fault'))).toBe(false)
})

test("a route's error answers come from the same table, grouped by status, each code once", () => {
  expect(SAMPLE.responses('notFound', 'notYours', 'busy', 'notFound')).toEqual({
    404: ['THING_ERROR'],
    403: ['THING_ERROR'],
    503: ['BUSY'],
  })
  expect(
    mergeResponses(SAMPLE.responses('notYours'), { 403: ['OTHER', 'THING_ERROR'], 404: ['GONE'] }),
  ).toEqual({
    403: ['THING_ERROR', 'OTHER'],
    404: ['GONE'],
  })
})
