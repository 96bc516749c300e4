import { expect, test } from 'bun:test'
import { createLogger } from '../../src/kernel/logger'
import { Dependency, DependencyDown, errText } from '../../src/kernel/resilience'

const capture = (level: 'info' | 'warn' = 'info') => {
  const lines: string[] = []
  return { lines, logger: createLogger(level, (l) => lines.push(l)) }
}

test('a line is one JSON object: time, level, message, then the fields', () => {
  const { lines, logger } = capture()
  logger.log('info', 'request', { request_id: 'r-1', status: 200, route: '/a "quoted" \\ route' })
  logger.log('warn', 'no fields')
  logger.log('error', 'empty fields', {})
  expect(lines).toHaveLength(3)
  const [a, b, c] = lines.map((l) => JSON.parse(l))
  expect(Object.keys(a)).toEqual(['t', 'level', 'msg', 'request_id', 'status', 'route'])
  expect(a).toMatchObject({ level: 'info', msg: 'request', status: 200, route: '/a "quoted" \\ route' })
  expect(new Date(a.t).toISOString()).toBe(a.t)
  expect(b).toEqual({ t: expect.any(String), level: 'warn', msg: 'no fields' })
  expect(c).toEqual({ t: expect.any(String), level: 'error', msg: 'empty fields' })
})

test('secret-looking fields are redacted; levels below the minimum are dropped', () => {
  const { lines, logger } = capture('warn')
  logger.log('info', 'dropped', { a: 1 })
  logger.log('warn', 'sign-in', { login: 1, password: 'hunter2', Authorization: 'Bearer x', api_token: 't' })
  expect(lines).toHaveLength(1)
  expect(lines[0]).not.toMatch(/hunter2|Bearer x|"t"\s*:\s*"t"/)
  expect(JSON.parse(lines[0])).toMatchObject({
    login: 1,
    password: '[redacted]',
    Authorization: '[redacted]',
  })
})

test("a dependency's failure is logged without the command it carried (@upstash/redis appends it: keys and values)", async () => {
  const lines: string[] = []
  const dep = new Dependency(
    'cache',
    1000,
    createLogger('info', (l) => lines.push(l)),
  )
  const failure = new Error(
    'UpstashError: ERR max daily request limit exceeded, command was: [["set","customer:v1:7","{\\"email\\":\\"ann@example.com\\"}"]]',
  )
  const thrown = await dep.call(() => Promise.reject(failure)).catch((e: Error) => e)
  expect(thrown).toBeInstanceOf(DependencyDown)
  expect((thrown as Error).message).toBe(
    'cache unavailable: UpstashError: ERR max daily request limit exceeded',
  )
  expect(lines.join('\n')).toContain('max daily request limit exceeded')
  expect(lines.join('\n')).not.toContain('ann@example.com')
  expect(errText(new Error('x'.repeat(1000)))).toHaveLength(300)
  dep.close()
})
