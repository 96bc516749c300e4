import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'

// The dependency rules (.dependency-cruiser.cjs) run in `npm test` on src/; here each one is shown to
// fail on a small tree that breaks it, and to pass on one that keeps to it. The names of the kernel's
// code (scripts/kernel-names.ts): tests/unit/kernel-names.test.ts.
const ROOT = resolve(import.meta.dir, '../..')
const CRUISER = join(ROOT, 'node_modules/dependency-cruiser/bin/dependency-cruiser.mjs')
const CONFIG = join(ROOT, '.dependency-cruiser.cjs')

let dir: string
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'tcs-deps-'))
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** Writes a tree of files into a fresh folder and cruises its src/ with the project's rules. */
async function violations(files: Record<string, string>) {
  const root = mkdtempSync(join(dir, 'tree-'))
  writeFileSync(
    join(root, 'tsconfig.json'),
    JSON.stringify({ compilerOptions: { module: 'ESNext', moduleResolution: 'bundler', strict: true } }),
  )
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true })
    writeFileSync(join(root, path), text)
  }
  // the report as JSON for the rule names; the exit code as the test command sees it (output type err)
  const run = (type: string) => {
    const proc = Bun.spawn([process.execPath, CRUISER, 'src', '--config', CONFIG, '--output-type', type], {
      cwd: root,
      stdout: 'pipe',
      stderr: 'pipe',
    })
    return Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  }
  const [[out, err], [, , code]] = await Promise.all([run('json'), run('err')])
  if (!out) throw new Error(`dependency-cruiser failed: ${err}`)
  const report = JSON.parse(out) as {
    summary: { violations: { rule: { name: string }; from: string; to: string }[] }
  }
  return { code, rules: report.summary.violations.map((v) => `${v.rule.name}: ${v.from} -> ${v.to}`) }
}

const alpha = {
  'src/modules/alpha/index.ts': "export { open } from './service'\n",
  'src/modules/alpha/service.ts': 'export const open = () => 1\n',
  'src/modules/alpha/domain/math.ts': 'export const twice = (x: number) => 2 * x\n',
  'src/modules/alpha/pure.ts': "export { twice } from './domain/math'\n",
}

describe('dependency rules', () => {
  test('a tree that keeps to them passes', async () => {
    const r = await violations({
      ...alpha,
      'src/kernel/clock.ts': 'export const now = () => 0\n',
      'src/modules/beta/index.ts': "import { open } from '../alpha'\nexport const b = open()\n",
      'src/modules/beta/domain/rule.ts': "import { twice } from '../../alpha/pure'\nexport const r = twice\n",
      'src/main/modules.ts':
        "import { open } from '../modules/alpha'\nimport { b } from '../modules/beta'\nexport const m = [open, b]\n",
    })
    expect(r.rules).toEqual([])
    expect(r.code).toBe(0)
  })

  test('a test beside its module imports what tests under tests/ import', async () => {
    const r = await violations({
      ...alpha,
      'src/kernel/db/client.ts': 'export const db = {}\n',
      'tests/support/app.ts': 'export const app = 1\n',
      'src/modules/beta/index.ts': 'export const b = 1\n',
      'src/modules/beta/domain/rule.test.ts':
        "import { db } from '../../../kernel/db/client'\nimport { open } from '../../alpha/service'\n" +
        "import { app } from '../../../../tests/support/app'\nexport const t = [db, open, app]\n",
    })
    expect(r.rules).toEqual([])
    expect(r.code).toBe(0)
  })

  const cases: [string, Record<string, string>, string][] = [
    [
      'kernel-imports-no-module',
      { 'src/kernel/app.ts': "import { open } from '../modules/alpha'\nexport const a = open\n" },
      'kernel-imports-no-module: src/kernel/app.ts -> src/modules/alpha/index.ts',
    ],
    [
      'module-through-index',
      { 'src/modules/beta/index.ts': "import { open } from '../alpha/service'\nexport const b = open\n" },
      'module-through-index: src/modules/beta/index.ts -> src/modules/alpha/service.ts',
    ],
    [
      'entries-through-index',
      { 'src/main/bun.ts': "import { open } from '../modules/alpha/service'\nexport const m = open\n" },
      'entries-through-index: src/main/bun.ts -> src/modules/alpha/service.ts',
    ],
    [
      'domain-is-pure',
      {
        'src/kernel/db/client.ts': 'export const db = {}\n',
        'src/modules/alpha/domain/fees.ts':
          "import { db } from '../../../kernel/db/client'\nexport const f = db\n",
      },
      'domain-is-pure: src/modules/alpha/domain/fees.ts -> src/kernel/db/client.ts',
    ],
    [
      "domain-is-pure (another module's index)",
      // another module's index loads that module (its database, cache, routes): domain/ takes its pure.ts
      { 'src/modules/beta/domain/rule.ts': "import { open } from '../../alpha'\nexport const r = open\n" },
      'domain-is-pure: src/modules/beta/domain/rule.ts -> src/modules/alpha/index.ts',
    ],
    [
      'domain-reaches-no-io',
      {
        'src/kernel/db/client.ts': 'export const db = {}\n',
        'src/kernel/money.ts': "import { db } from './db/client'\nexport const cents = () => db\n",
        'src/modules/alpha/domain/fees.ts':
          "import { cents } from '../../../kernel/money'\nexport const f = cents\n",
      },
      'domain-reaches-no-io: src/modules/alpha/domain/fees.ts -> src/kernel/db/client.ts',
    ],
    [
      'no-source-imports-tests',
      {
        'src/modules/alpha/domain/math.test.ts': 'export const cases = [1]\n',
        'src/modules/alpha/service.ts':
          "import { cases } from './domain/math.test'\nexport const open = () => cases\n",
      },
      'no-source-imports-tests: src/modules/alpha/service.ts -> src/modules/alpha/domain/math.test.ts',
    ],
    [
      'no-circular-modules',
      {
        'src/modules/alpha/index.ts': "import { b } from '../beta'\nexport const a = () => b\n",
        'src/modules/beta/index.ts': "import { a } from '../alpha'\nexport const b = () => a\n",
      },
      'no-circular-modules: src/modules/alpha/index.ts -> src/modules/beta/index.ts',
    ],
  ]
  for (const [rule, files, expected] of cases)
    test(`${rule} fails the check`, async () => {
      const r = await violations({ ...alpha, ...files })
      expect(r.rules).toContain(expected)
      expect(r.code).not.toBe(0)
    })
})
