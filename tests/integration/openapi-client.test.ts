// A client generated from the served document compiles under `tsc --strict`, and its types say what the
// server sends (issue 28): ids are numbers, notification rows are rows of known values, files are blobs.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import examples from '../../src/main/openapi-examples.json'
import { makeTestApp, type TestApp } from '../support/app'

const ROOT = resolve(import.meta.dir, '../..')
let t: TestApp
const dir = mkdtempSync(join(tmpdir(), 'tcs-client-'))
beforeAll(async () => {
  // with the servers' success examples (real answers, recorded by npm run openapi:examples)
  t = await makeTestApp({ examples })
})
afterAll(async () => {
  await t.close()
  rmSync(dir, { recursive: true, force: true })
})

async function run(args: string[]) {
  const proc = Bun.spawn([process.execPath, ...args], { cwd: dir, stdout: 'pipe', stderr: 'pipe' })
  const [out, err, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ])
  return { out, err, code }
}

/** `tsc --strict --noEmit` over `files` in the temp dir, with a config of its own. */
function strictCheck(name: string, options: Record<string, unknown>, files: Record<string, string[]>) {
  writeFileSync(
    join(dir, name),
    JSON.stringify({
      compilerOptions: {
        strict: true,
        noEmit: true,
        target: 'ES2022',
        module: 'ESNext',
        moduleResolution: 'bundler',
        ...options,
      },
      ...files,
    }),
  )
  return run([join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', name])
}

// What a TypeScript user writes against the generated types: each line fails to compile when the
// document says less than the server sends (an id as string | number, a row as unknown[]).
const USAGE = `import type { paths } from './api'
type Json<P extends keyof paths, M extends keyof paths[P], S extends number = 200> = paths[P][M] extends {
  responses: { [K in S]: { content: { 'application/json': infer B } } }
}
  ? B
  : never
type Open = Json<'/trade/open', 'post'>
export const ticket: number = ({} as Open).order
export const price: number = ({} as Open).trade.open_price
type Rows = Json<'/notify/list', 'get'>['rows']
export const cell: string | number | null | boolean | Record<string, unknown> = ({} as Rows)[0][0]
type Req = paths['/trade/open']['post']['requestBody']
export const body: NonNullable<Req>['content']['application/json'] = {
  login: 100001, cmd: 0, volume: 10, symbol: 'BTCUSD', sl: 0, tp: 0,
}
type Step = NonNullable<paths['/manager/prop/programs']['post']['requestBody']>['content']['application/json']['steps'][number]
export const phase: 0 | 1 = ({} as Step).phase_type
type Health = Json<'/health/ready', 'get'>
export const state: 'up' | 'down' = ({} as Health).checks.database.state
`

test('openapi-typescript generates a client that compiles under tsc --strict, with typed rows and ids', async () => {
  const doc = await t.request('GET', '/swagger/json')
  writeFileSync(join(dir, 'openapi.json'), doc.text)
  const gen = await run([
    join(ROOT, 'node_modules/openapi-typescript/bin/cli.js'),
    'openapi.json',
    '-o',
    'api.ts',
  ])
  expect(gen.code, gen.err).toBe(0)
  writeFileSync(join(dir, 'usage.ts'), USAGE)
  const tsc = await strictCheck('tsconfig.json', {}, { files: ['api.ts', 'usage.ts'] })
  expect(tsc.out + tsc.err).toBe('')
  expect(tsc.code).toBe(0)
  const api = readFileSync(join(dir, 'api.ts'), 'utf8')
  const paths = Object.keys((doc.json as { paths: Record<string, unknown> }).paths)
  console.log(`[client] ${api.split('\n').length} lines of types for ${paths.length} paths`)
  expect(paths.filter((p) => !api.includes(`"${p}": {`))).toEqual([])
}, 120_000)

/** `getPropChallengesById` → `GetPropChallengesById`: the prefix of orval's names for an operation. */
const pascal = (id: string) => id[0]!.toUpperCase() + id.slice(1)

test('@hey-api/openapi-ts and orval (fetch and zod clients) generate clients that compile under tsc --strict; the zod schemas accept every recorded answer', async () => {
  const doc = (await t.request('GET', '/swagger/json')).json as Record<string, any>
  writeFileSync(join(dir, 'openapi.json'), JSON.stringify(doc))
  const hey = await run([
    join(ROOT, 'node_modules/@hey-api/openapi-ts/bin/run.js'),
    '-i',
    'openapi.json',
    '-o',
    'hey',
  ])
  expect(hey.code, hey.out + hey.err).toBe(0)
  writeFileSync(
    join(dir, 'orval.config.cjs'),
    `module.exports = {
  fetch: { input: './openapi.json', output: { target: './orval/fetch.ts', client: 'fetch', mode: 'single' } },
  zod: { input: './openapi.json', output: { target: './orval/zod.ts', client: 'zod', mode: 'single' } },
}`,
  )
  const orval = await run([
    join(ROOT, 'node_modules/orval/dist/bin/orval.mjs'),
    '--config',
    'orval.config.cjs',
  ])
  expect(orval.code, orval.out + orval.err).toBe(0)
  const tsc = await strictCheck(
    'tsconfig.clients.json',
    {
      lib: ['ES2022', 'DOM', 'DOM.Iterable'],
      skipLibCheck: true,
      // the generated zod schemas import the project's zod
      baseUrl: '.',
      paths: { zod: [join(ROOT, 'node_modules/zod')] },
    },
    { include: ['hey/**/*.ts', 'orval/*.ts'] },
  )
  expect(tsc.out + tsc.err).toBe('')
  expect(tsc.code).toBe(0)
  // the document's success examples are real answers: orval's zod schema of each operation accepts its own
  // (loaded from the temp dir, where no node_modules is: its import of zod points at the project's)
  const source = readFileSync(join(dir, 'orval/zod.ts'), 'utf8')
  writeFileSync(
    join(dir, 'orval/zod.run.ts'),
    source.replace(/from 'zod'/g, `from '${join(ROOT, 'node_modules/zod')}'`),
  )
  const zod = (await import(join(dir, 'orval/zod.run.ts'))) as Record<
    string,
    { safeParse: (v: unknown) => any }
  >
  const refused: string[] = []
  let checked = 0
  for (const [path, item] of Object.entries<Record<string, any>>(doc.paths))
    for (const [method, op] of Object.entries<Record<string, any>>(item)) {
      const example = op.responses?.['200']?.content?.['application/json']?.example
      const schema = zod[`${pascal(op.operationId)}Response`]
      if (example === undefined || !schema) continue
      checked++
      const parsed = schema.safeParse(example)
      if (!parsed.success)
        refused.push(`${method.toUpperCase()} ${path}: ${JSON.stringify(parsed.error.issues).slice(0, 300)}`)
    }
  console.log(
    `[client] orval's zod schemas accepted ${checked - refused.length} of ${checked} recorded answers`,
  )
  expect(checked).toBeGreaterThan(150)
  expect(refused).toEqual([])
}, 180_000)
