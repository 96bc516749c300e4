// The kernel names no module (docs/architecture.md, the dependency rule): dependency-cruiser checks
// imports; this checks the names the kernel's code uses. `npm test` fails on a finding.
// `bun scripts/kernel-names.ts [root]` prints each finding and exits 1 when there is one.
//
// What counts. The kernel's TypeScript (tests left out) is read with the TypeScript scanner, so comments
// never count and every identifier and string literal (template pieces and regular expressions too) is
// one token. A token's words: an identifier split at camelCase, snake_case and digits (`byAffiliateHost`:
// by affiliate host), a string split at anything not a letter or digit and then at camelCase
// (`'/cashier/deposit'`: cashier deposit). A module's name (its folder: kebab, camel or one word) is a
// word sequence too, matched by its letters at word boundaries: `copytrade`, `copyTrade` and `copy-trade`
// are one name. For each module, a kernel token is a finding when
//   1. it is a name built on the module's name: the module's words and more (`byAffiliateHost`,
//      `cashierSecrets`, `'cashier.reconcile'`, `'/cashier/deposit'`, `affiliate_host`);
//   2. it is the module's name alone where a name stands for a thing: a string (`'cashier'`) or a key
//      (`cashier: { … }`, a config section). The bare word as code (`ping()`, a variable `limits`) is a
//      word the kernel may use: it names nothing of the module;
//   3. it is a name the module declares, read from the module's own code: its route paths (first
//      argument of `.get/.post/…/.group`), tables (`sqliteTable`), ports and topics (`definePort`,
//      `defineTopic`), OpenAPI tags (`tags: [{ name }]`), namespaced names of jobs, consumers and limits
//      (`name: 'x.y'`, `'x:y'`) and environment variables (the keys of its `config.ts`).
// Rules 1 and 2 are skipped for a module whose name is a kernel word, one that names a file or folder of
// the kernel (`auth`: kernel/auth, `health`: kernel/http/health.ts, `limits`: kernel/limits.ts): the
// kernel's `/health` route and `healthRoutes` are its own and do not make a `health` module impossible;
// such a module is checked by what it declares (rule 3) only. ALLOWED lists the rest of the shared words.
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { basename, join, relative } from 'node:path'
import ts from 'typescript'

/**
 * Word sequences the kernel may use whatever the modules are called: the product's name
 * (`trading-client-service`, its token audience `trading-client-api`) and the file store's default
 * folder (`data/uploads`).
 */
const ALLOWED = [
  ['trading', 'client'],
  ['data', 'uploads'],
]

interface Token {
  kind: 'identifier' | 'string'
  text: string
  words: string[]
  line: number
  /** An identifier followed by `:` (an object or type key). */
  key: boolean
}

/** `byAffiliateHost` → by affiliate host; `HTTPServer2` → http server 2; `affiliate-host` → affiliate host. */
export function wordsOf(text: string): string[] {
  return text
    .split(/[^A-Za-z0-9]+/)
    .flatMap((part) => part.match(/[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+/g) ?? [])
    .map((w) => w.toLowerCase())
}

/** Whether words[i..j) spell `name` (its words joined) for some i < j, and whether other words remain. */
function spells(words: string[], name: string): { found: boolean; alone: boolean } {
  for (let i = 0; i < words.length; i++) {
    let joined = ''
    for (let j = i; j < words.length && joined.length < name.length; j++) {
      joined += words[j]
      if (joined === name) return { found: true, alone: i === 0 && j === words.length - 1 }
    }
  }
  return { found: false, alone: false }
}

/** Drops the ALLOWED sequences from a token's words (each leaves a gap: no name spans it). */
function withoutAllowed(words: string[]): string[][] {
  const parts: string[][] = [[]]
  for (let i = 0; i < words.length; i++) {
    const seq = ALLOWED.find((a) => a.every((w, k) => words[i + k] === w))
    if (seq) {
      i += seq.length - 1
      parts.push([])
    } else parts[parts.length - 1].push(words[i])
  }
  return parts.filter((p) => p.length > 0)
}

interface Raw {
  kind: ts.SyntaxKind
  text: string
  /** A string literal's value (templates and regular expressions: their text, for words only). */
  value?: string
  /** A string literal without substitutions: a name it may declare. */
  literal: boolean
  line: number
}

/** Every token of a TypeScript file, comments left out; templates and regular expressions read whole. */
function scan(code: string): Raw[] {
  const scanner = ts.createScanner(ts.ScriptTarget.Latest, true, ts.LanguageVariant.Standard, code)
  const lineStarts = [0]
  for (let i = 0; i < code.length; i++) if (code[i] === '\n') lineStarts.push(i + 1)
  const lineOf = (pos: number) => {
    let lo = 0
    let hi = lineStarts.length - 1
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1
      if (lineStarts[mid] <= pos) lo = mid
      else hi = mid - 1
    }
    return lo + 1
  }
  const out: Raw[] = []
  // what an open `{` belongs to: a template's `${` or a block, object or type
  const braces: ('template' | 'brace')[] = []
  let previous = ts.SyntaxKind.Unknown
  for (let kind = scanner.scan(); kind !== ts.SyntaxKind.EndOfFileToken; kind = scanner.scan()) {
    if (kind === ts.SyntaxKind.CloseBraceToken && braces.pop() === 'template')
      kind = scanner.reScanTemplateToken(false)
    else if (kind === ts.SyntaxKind.OpenBraceToken) braces.push('brace')
    else if (
      (kind === ts.SyntaxKind.SlashToken || kind === ts.SyntaxKind.SlashEqualsToken) &&
      !endsExpression(previous)
    )
      kind = scanner.reScanSlashToken()
    if (kind === ts.SyntaxKind.TemplateHead || kind === ts.SyntaxKind.TemplateMiddle) braces.push('template')
    const literal =
      kind === ts.SyntaxKind.StringLiteral || kind === ts.SyntaxKind.NoSubstitutionTemplateLiteral
    const text = scanner.getTokenText()
    const value = literal
      ? scanner.getTokenValue()
      : kind === ts.SyntaxKind.TemplateHead ||
          kind === ts.SyntaxKind.TemplateMiddle ||
          kind === ts.SyntaxKind.TemplateTail
        ? scanner.getTokenValue()
        : kind === ts.SyntaxKind.RegularExpressionLiteral
          ? text
          : undefined
    out.push({ kind, text, value, literal, line: lineOf(scanner.getTokenStart()) })
    previous = kind
  }
  return out
}

const isName = (kind: ts.SyntaxKind) =>
  kind === ts.SyntaxKind.Identifier ||
  kind === ts.SyntaxKind.PrivateIdentifier ||
  (kind >= ts.SyntaxKind.FirstKeyword && kind <= ts.SyntaxKind.LastKeyword)

/** The identifiers and string literals of a TypeScript file, comments left out. */
export function tokensOf(code: string): Token[] {
  const raw = scan(code)
  const tokens: Token[] = []
  // the open brackets: a key is a member of an object, a type or a class (`{`), not a parameter (`(`)
  const open: ts.SyntaxKind[] = []
  raw.forEach((r, i) => {
    const k = r.kind
    if (
      k === ts.SyntaxKind.OpenBraceToken ||
      k === ts.SyntaxKind.OpenParenToken ||
      k === ts.SyntaxKind.OpenBracketToken ||
      k === ts.SyntaxKind.TemplateHead
    )
      open.push(k)
    else if (
      k === ts.SyntaxKind.CloseBraceToken ||
      k === ts.SyntaxKind.CloseParenToken ||
      k === ts.SyntaxKind.CloseBracketToken ||
      k === ts.SyntaxKind.TemplateTail
    )
      open.pop()
    if (isName(k)) {
      const text = r.text.replace(/^#/, '')
      // a key: `name:` or `name?:` inside braces (not `a ? name : b`, not `case name:`)
      const next = raw[i + 1]?.kind === ts.SyntaxKind.QuestionToken ? raw[i + 2] : raw[i + 1]
      const before = raw[i - 1]?.kind
      const key =
        next?.kind === ts.SyntaxKind.ColonToken &&
        open.at(-1) === ts.SyntaxKind.OpenBraceToken &&
        before !== ts.SyntaxKind.QuestionToken &&
        before !== ts.SyntaxKind.CaseKeyword
      tokens.push({ kind: 'identifier', text, words: wordsOf(text), line: r.line, key })
    } else if (r.value !== undefined)
      tokens.push({ kind: 'string', text: r.value, words: wordsOf(r.value), line: r.line, key: false })
  })
  return tokens
}

/** After these a `/` divides; elsewhere it starts a regular expression. */
function endsExpression(kind: ts.SyntaxKind) {
  return (
    isName(kind) ||
    kind === ts.SyntaxKind.NumericLiteral ||
    kind === ts.SyntaxKind.StringLiteral ||
    kind === ts.SyntaxKind.CloseParenToken ||
    kind === ts.SyntaxKind.CloseBracketToken ||
    kind === ts.SyntaxKind.CloseBraceToken ||
    kind === ts.SyntaxKind.TemplateTail ||
    kind === ts.SyntaxKind.NoSubstitutionTemplateLiteral
  )
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f)
    if (statSync(p).isDirectory()) return sourceFiles(p)
    return p.endsWith('.ts') && !p.endsWith('.test.ts') ? [p] : []
  })
}

/** A route path with its parameters (`:id`, `{id}`) as `*`: `/cashier/:id` and `/cashier/{id}` are one. */
const routeKey = (path: string) =>
  path
    .replace(/\/+$/, '')
    .split('/')
    .map((s) => (/^[:{]/.test(s) ? '*' : s))
    .join('/')

const ROUTE_METHODS = new Set([
  'get',
  'post',
  'put',
  'patch',
  'delete',
  'all',
  'head',
  'options',
  'ws',
  'group',
])
const DECLARING_CALLS = new Set(['sqliteTable', 'definePort', 'defineTopic'])

/** The names a module declares in its own code (rule 3), each with what it is. */
export function declaredNames(moduleDir: string): Map<string, string> {
  const names = new Map<string, string>()
  for (const file of sourceFiles(moduleDir)) {
    const raw = scan(readFileSync(file, 'utf8'))
    const config = basename(file) === 'config.ts'
    // the depth of brackets and braces, and the depth inside a `tags: [ … ]` (-1: outside)
    let depth = 0
    let tagsDepth = -1
    raw.forEach((r, i) => {
      const [before, next, after] = [raw[i - 1], raw[i + 1], raw[i + 2]]
      if (r.kind === ts.SyntaxKind.OpenBracketToken || r.kind === ts.SyntaxKind.OpenBraceToken) depth++
      if (r.kind === ts.SyntaxKind.CloseBracketToken || r.kind === ts.SyntaxKind.CloseBraceToken) {
        depth--
        if (depth < tagsDepth) tagsDepth = -1
      }
      if (!isName(r.kind)) return
      const colon = next?.kind === ts.SyntaxKind.ColonToken
      if (r.text === 'tags' && colon && after?.kind === ts.SyntaxKind.OpenBracketToken) tagsDepth = depth + 1
      // a variable: a key of an object in config.ts (`{ CASHIER_SECRETS: z.string() }`)
      const member =
        before?.kind === ts.SyntaxKind.OpenBraceToken || before?.kind === ts.SyntaxKind.CommaToken
      if (config && colon && member && /^[A-Z][A-Z0-9]*_[A-Z0-9_]+$/.test(r.text))
        names.set(r.text, `variable ${r.text}`)
      const value = after?.literal ? after.value! : undefined
      if (value === undefined) return
      if (next.kind === ts.SyntaxKind.OpenParenToken) {
        if (DECLARING_CALLS.has(r.text)) names.set(value, `${r.text}('${value}')`)
        else if (
          ROUTE_METHODS.has(r.text) &&
          before?.kind === ts.SyntaxKind.DotToken &&
          /^\/.*[A-Za-z]/.test(value)
        )
          names.set(routeKey(value), `route ${value}`)
      } else if (r.text === 'name' && colon) {
        if (tagsDepth >= 0 && depth >= tagsDepth) names.set(value, `tag '${value}'`)
        else if (/^[a-z][\w-]*[.:][\w.:-]+$/.test(value)) names.set(value, `name '${value}'`)
      }
    })
  }
  return names
}

/** The words of the kernel's own file and folder names (kernel/http/health.ts: health). */
function kernelWords(dir: string, into = new Set<string>()): Set<string> {
  for (const f of readdirSync(dir)) {
    const p = join(dir, f)
    into.add(wordsOf(f.replace(/\.ts$/, '')).join(''))
    if (statSync(p).isDirectory()) kernelWords(p, into)
  }
  return into
}

/** Each place the kernel names a module: `file:line: [module] token (why)`. */
export function kernelNamesOfModules(root: string): string[] {
  const modulesDir = join(root, 'src/modules')
  const kernelDir = join(root, 'src/kernel')
  const modules = readdirSync(modulesDir).filter((m) => statSync(join(modulesDir, m)).isDirectory())
  const ownWords = kernelWords(kernelDir)
  // a name the kernel declares as well is the kernel's (a module reading APP_ENV)
  const kernelDeclares = declaredNames(kernelDir)
  const kernel = sourceFiles(kernelDir).map((file) => ({
    file: relative(root, file),
    tokens: tokensOf(readFileSync(file, 'utf8')),
  }))
  const found: string[] = []
  for (const m of modules) {
    const name = wordsOf(m).join('')
    const byWord = !ownWords.has(name)
    const declared = declaredNames(join(modulesDir, m))
    for (const n of kernelDeclares.keys()) declared.delete(n)
    for (const { file, tokens } of kernel)
      for (const t of tokens) {
        const why: string[] = []
        if (byWord)
          for (const words of withoutAllowed(t.words)) {
            const s = spells(words, name)
            if (s.found && !s.alone) why.push('a name built on its name')
            else if (s.found && (t.kind === 'string' ? t.text === m : t.key))
              why.push(`its name as a ${t.kind === 'string' ? 'string' : 'key'}`)
          }
        const own =
          t.kind === 'string'
            ? (declared.get(t.text) ?? (t.text.startsWith('/') ? declared.get(routeKey(t.text)) : undefined))
            : /^[A-Z][A-Z0-9]*_/.test(t.text)
              ? declared.get(t.text)
              : undefined
        if (own) why.push(`it declares ${own}`)
        if (why.length) {
          const shown = t.kind === 'string' ? `'${t.text}'` : t.text
          found.push(`${file}:${t.line}: [${m}] ${shown} (${[...new Set(why)].join('; ')})`)
        }
      }
  }
  return found
}

if (import.meta.main) {
  const found = kernelNamesOfModules(process.argv[2] ?? process.cwd())
  for (const f of found) console.log(f)
  if (found.length) {
    console.log(`${found.length} module name(s) in the kernel: declare them in the module instead`)
    process.exit(1)
  }
  console.log('the kernel names no module')
}
