// The kernel names no module (docs/architecture.md, the dependency rule): dependency-cruiser checks
// imports; this checks the words. A module's name as a word in the kernel's code (comments left out)
// fails `npm test`: a tag, a config section, a route path or a job name of a module belongs to it.
// `bun scripts/kernel-names.ts [root]` prints each finding and exits 1 when there is one.
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'

/**
 * Words that are module names and kernel concepts alike: `auth` (kernel/auth: tokens, sessions), the
 * product's name (`trading-client-service`), and the default folder of the file storage port.
 */
const ALLOWED = [/\bauth\b/gi, /trading[- ]client/gi, /data\/uploads/g]

const strip = (code: string) => code.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`\\])\/\/.*$/gm, '$1')

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f)
    return statSync(p).isDirectory() ? files(p) : p.endsWith('.ts') ? [p] : []
  })
}

/** Each place a module's name stands in the kernel's code: `file:line: [module] text`. */
export function kernelNamesOfModules(root: string): string[] {
  const modules = readdirSync(join(root, 'src/modules')).filter((m) =>
    statSync(join(root, 'src/modules', m)).isDirectory(),
  )
  const found: string[] = []
  for (const file of files(join(root, 'src/kernel'))) {
    const lines = strip(readFileSync(file, 'utf8')).split('\n')
    lines.forEach((line, i) => {
      const text = ALLOWED.reduce((t, re) => t.replace(re, ''), line)
      for (const m of modules)
        if (new RegExp(`\\b${m}\\b`, 'i').test(text))
          found.push(`${relative(root, file)}:${i + 1}: [${m}] ${line.trim()}`)
    })
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
