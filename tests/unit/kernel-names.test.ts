import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { kernelNamesOfModules, tokensOf, wordsOf } from '../../scripts/kernel-names'

// scripts/kernel-names.ts: the names of the kernel's code (dependency-cruiser sees only its imports),
// on small trees of files, then on this repository.
const ROOT = resolve(import.meta.dir, '../..')

let dir: string
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'tcs-names-'))
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** A kernel as small as its cases need, beside modules of the given names and files. */
function findings(kernel: Record<string, string>, modules: Record<string, string> = {}) {
  const root = mkdtempSync(join(dir, 'tree-'))
  const files = {
    'src/modules/cashier/index.ts': 'export const x = 1\n',
    'src/modules/auth/index.ts': 'export const y = 1\n',
    'src/kernel/auth/tokens.ts': 'export const t = 1\n',
    ...modules,
    ...Object.fromEntries(Object.entries(kernel).map(([p, text]) => [`src/kernel/${p}`, text])),
  }
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true })
    writeFileSync(join(root, path), text)
  }
  return kernelNamesOfModules(root)
}
const config = (code: string) => findings({ 'config.ts': code })

describe('words and tokens', () => {
  test('identifiers split at camelCase, snake_case and digits; strings at anything else too', () => {
    expect(wordsOf('byAffiliateHost')).toEqual(['by', 'affiliate', 'host'])
    expect(wordsOf('HTTPServer2')).toEqual(['http', 'server', '2'])
    expect(wordsOf('affiliate_host')).toEqual(['affiliate', 'host'])
    expect(wordsOf('/cashier/deposit/:id')).toEqual(['cashier', 'deposit', 'id'])
  })

  test('comments are not tokens; template pieces and regular expressions are', () => {
    const tokens = tokensOf(
      // biome-ignore lint/suspicious/noTemplateCurlyInString: TypeScript source holding a template, as text
      '// cashier\n/* cashier */\nconst a = `x/${b}/cashier` /** cashier */\nconst r = /cashier/g\n',
    )
    expect(tokens.map((t) => t.text)).toEqual([
      'const',
      'a',
      'x/',
      'b',
      '/cashier',
      'const',
      'r',
      '/cashier/g',
    ])
    expect(
      tokensOf('const o = { cashier: 1, b?: 2 }\nf(cashier)')
        .filter((t) => t.key)
        .map((t) => t.text),
    ).toEqual(['cashier', 'b'])
  })
})

describe('the kernel names no module', () => {
  test('a name built on a module name fails: camelCase, snake_case, a job name, a route, a template', () => {
    expect(config('export const cashierSecrets = {}\n')).toHaveLength(1)
    expect(config("export const job = 'cashier.reconcile'\n")).toHaveLength(1)
    expect(config("export const path = '/cashier/deposit'\n")).toHaveLength(1)
    expect(config("export const column = 'cashier_id'\n")).toHaveLength(1)
    // biome-ignore lint/suspicious/noTemplateCurlyInString: TypeScript source holding a template, as text
    expect(config('export const url = (h: string) => `https://${h}/cashier/pay`\n')).toHaveLength(1)
    const [f] = findings(
      { 'http/security.ts': 'export const site = (r: { byAffiliateHost(h: string): number }) => r\n' },
      { 'src/modules/affiliate/index.ts': 'export const a = 1\n' },
    )
    expect(f).toBe('src/kernel/http/security.ts:1: [affiliate] byAffiliateHost (a name built on its name)')
  })

  test('the name alone fails where it names a thing: a string, a key (a config section)', () => {
    expect(config("export const m = 'cashier'\n")).toHaveLength(1)
    expect(config('export const c = { cashier: { secrets: {} } }\n')).toHaveLength(1)
    expect(config('export interface C { cashier?: { secrets: string } }\n')).toHaveLength(1)
  })

  test('kebab, camel and one-word folder names are one name', () => {
    const kebab = { 'src/modules/copy-trade/index.ts': 'export const c = 1\n' }
    expect(findings({ 'a.ts': 'export const copyTradeLimit = 1\n' }, kebab)).toHaveLength(1)
    expect(findings({ 'a.ts': "export const job = 'copytrade.audit'\n" }, kebab)).toHaveLength(1)
    const camel = { 'src/modules/copyTrade/index.ts': 'export const c = 1\n' }
    expect(findings({ 'a.ts': "export const t = 'copy_trade_links'\n" }, camel)).toHaveLength(1)
  })

  test('what a module declares fails in the kernel even when it does not hold its name', () => {
    const declares = {
      'src/modules/cashier/config.ts': 'export const Env = z.object({ WIRE_BANK: z.string().optional() })\n',
      'src/modules/cashier/schema.ts': "export const t = sqliteTable('payments', {})\n",
      'src/modules/cashier/routes.ts': "export const r = (app: any) => app.post('/pay/:id', () => 1)\n",
      'src/modules/cashier/index.ts': "export const m = { name: 'x', tags: [{ name: 'Payments' }] }\n",
    }
    const kernel = (code: string) => findings({ 'a.ts': code }, declares)
    expect(kernel('export const v = (s: any) => s.WIRE_BANK\n')).toEqual([
      'src/kernel/a.ts:1: [cashier] WIRE_BANK (it declares variable WIRE_BANK)',
    ])
    expect(kernel("export const t = 'payments'\n")).toHaveLength(1)
    expect(kernel("export const p = '/pay/{id}'\n")).toHaveLength(1)
    expect(kernel("export const tag = 'Payments'\n")).toHaveLength(1)
    expect(kernel("export const other = 'payment'\n")).toEqual([])
  })

  test('ping, health and limits modules: the kernel words of the same name pass', () => {
    const modules = {
      'src/modules/ping/index.ts': "export const jobs = [{ name: 'ping.echo' }]\n",
      'src/modules/ping/routes.ts': "export const r = (app: any) => app.get('/ping', () => 'pong')\n",
      'src/modules/health/index.ts': "export const jobs = [{ name: 'health.probe' }]\n",
      'src/modules/limits/index.ts': "export const t = [{ name: 'Limits' }]\n",
    }
    const kernel = {
      'cache/redis.ts': "export class R {\n  async ping() {\n    return send('PING')\n  }\n}\n",
      'http/health.ts':
        "export const healthRoutes = (app: any) => app.get('/health', () => ({ health: 'ok' }))\n",
      'limits.ts': 'export const limits = (max: number) => ({ max })\nexport const rateLimits = limits(1)\n',
    }
    expect(findings(kernel, modules)).toEqual([])
    // what such a module declares still counts
    expect(
      findings(
        { ...kernel, 'a.ts': "export const j = ['health.probe', 'ping.echo', '/ping']\n" },
        modules,
      ).sort(),
    ).toEqual([
      "src/kernel/a.ts:1: [health] 'health.probe' (it declares name 'health.probe')",
      "src/kernel/a.ts:1: [ping] '/ping' (it declares route /ping)",
      "src/kernel/a.ts:1: [ping] 'ping.echo' (a name built on its name; it declares name 'ping.echo')",
    ])
  })

  test('comments, kernel concepts of the same name, allowed words and other words pass', () => {
    expect(config('// the cashier reads this\n/* cashier */\nexport const a = 1\n')).toEqual([])
    expect(config("export const key = 'auth:rev:v2'\nexport const authHeader = 'authorization'\n")).toEqual(
      [],
    )
    expect(config("export const name = 'trading-client-service'\n")).toEqual([])
    expect(config('export const cashiers = 1\nexport const f = (cashier: number) => cashier\n')).toEqual([])
    // the kernel's own tests may name anything
    expect(findings({ 'config.test.ts': "export const c = 'cashier.reconcile'\n" })).toEqual([])
  })

  test('the kernel of this repository names none', () => {
    expect(kernelNamesOfModules(ROOT)).toEqual([])
  })
})
