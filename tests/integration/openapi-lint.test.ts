// The OpenAPI document as integrating developers' tools read it (issue 28): Redocly's recommended rules
// and Spectral's `spectral:oas` find no error in it (before: 69 and 72, almost all keywords OpenAPI 3.0
// does not have).
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import examples from '../../src/main/openapi-examples.json'
import { makeTestApp, type TestApp } from '../support/app'

const ROOT = resolve(import.meta.dir, '../..')
let t: TestApp
const dir = mkdtempSync(join(tmpdir(), 'tcs-lint-'))
beforeAll(async () => {
  // with the servers' success examples: Spectral checks each against its schema (oas3-valid-media-example)
  t = await makeTestApp({ examples })
})
afterAll(async () => {
  await t.close()
  rmSync(dir, { recursive: true, force: true })
})

test('Redocly lint (recommended rules): no error', async () => {
  const doc = await t.request('GET', '/swagger/json')
  expect(doc.status).toBe(200)
  const file = join(dir, 'openapi.json')
  writeFileSync(file, doc.text)
  const proc = Bun.spawn(
    [process.execPath, join(ROOT, 'node_modules/@redocly/cli/bin/cli.js'), 'lint', file, '--format=json'],
    {
      stdout: 'pipe',
      stderr: 'pipe',
      env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
    },
  )
  const [out, err, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ])
  const report = JSON.parse(out.slice(out.indexOf('{'))) as {
    totals: { errors: number; warnings: number }
    problems: { ruleId: string; severity: string; message: string; location: { pointer: string }[] }[]
  }
  const errors = report.problems.filter((p) => p.severity === 'error')
  console.log(
    `[redocly] ${report.totals.errors} errors, ${report.totals.warnings} warnings: ${[
      ...new Set(report.problems.map((p) => p.ruleId)),
    ].join(', ')}`,
  )
  expect(errors.map((e) => `${e.ruleId} ${e.location[0]?.pointer}: ${e.message}`)).toEqual([])
  expect(code, err.slice(-500)).toBe(0)
}, 60_000)

test('Spectral (spectral:oas, .spectral.yaml): no error', async () => {
  const doc = await t.request('GET', '/swagger/json')
  const file = join(dir, 'openapi-spectral.json')
  writeFileSync(file, doc.text)
  const proc = Bun.spawn(
    [
      process.execPath,
      join(ROOT, 'node_modules/@stoplight/spectral-cli/dist/index.js'),
      'lint',
      file,
      '--ruleset',
      join(ROOT, '.spectral.yaml'),
      '--format',
      'json',
      '--quiet',
    ],
    { stdout: 'pipe', stderr: 'pipe' },
  )
  const [out, err] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()])
  await proc.exited
  const problems = JSON.parse(out.slice(out.indexOf('[')) || '[]') as {
    code: string
    severity: number
    path: (string | number)[]
    message: string
  }[]
  const errors = problems.filter((p) => p.severity === 0)
  console.log(`[spectral] ${errors.length} errors, ${problems.length - errors.length} other findings`)
  expect(
    errors.map((e) => `${e.code} ${e.path.join('/')}: ${e.message}`),
    err.slice(-300),
  ).toEqual([])
}, 60_000)
