import { expect, test } from 'bun:test'
import { spawn } from 'bun'

// MEMORY_LOCK=all (src/kernel/db/local/memory-lock.ts) in a process of its own: mlockall would lock the test
// runner's memory too. The kernel's count of the child's resident locked pages (smaps_rollup) says
// whether it took effect.
test('lockMemory locks the pages of the process, and those it touches later', async () => {
  const script = `
    import { lockMemory } from './src/kernel/db/local/memory-lock'
    const locked = () => Number(/Locked:\\s+(\\d+) kB/.exec(require('node:fs').readFileSync('/proc/self/smaps_rollup', 'utf8'))[1])
    const before = locked()
    const result = await lockMemory()
    const after = locked()
    const grown = new Uint8Array(64 * 1024 * 1024).fill(1)
    console.log(JSON.stringify({ result, before, after, grown: locked() - after, sum: grown[12345] }))
  `
  const child = spawn(['bun', '-e', script], {
    cwd: `${import.meta.dir}/../..`,
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const out = await new Response(child.stdout).text()
  expect(await child.exited).toBe(0)
  const r = JSON.parse(out)
  expect(r.result).toEqual({ locked: true })
  expect(r.before).toBe(0)
  // what was resident: at least the runtime's own code and heap
  expect(r.after).toBeGreaterThan(10 * 1024)
  // 64 MiB allocated and written after the call are locked as they are touched (MCL_FUTURE | MCL_ONFAULT)
  expect(r.grown).toBeGreaterThanOrEqual(60 * 1024)
})
