// A/B of this tree against another checkout (e.g. `git worktree add /tmp/before <commit>` with a
// node_modules link): both servers pinned to core 0, wrk on core 1 alternating windows between them, so
// the host's drift (raw Bun.serve moves ±30% here between minutes) hits both alike.
//   bun bench/ab.ts /tmp/before            GET /account/me, cached watch list, POST /trade/open
// Prints requests/s per window (with p99 for trade open) and the ratio this tree / the other.
import { resolve } from 'node:path'
import { accountTokens, openScript, startPinned, wrk } from './lib'

const other = process.argv[2]
if (!other) throw new Error('usage: bun bench/ab.ts <other checkout>')
const rounds = Number(process.env.ROUNDS ?? 4)
const seconds = Number(process.env.BENCH_SECONDS ?? 6)
const connections = Number(process.env.BENCH_CONNECTIONS ?? 50)
const here = resolve(import.meta.dir, '..')

async function start(dir: string, name: string) {
  process.chdir(dir)
  const s = await startPinned('scripts/serve-temp.ts', 0, { LOG_LEVEL: 'info', QUOTE_SIMULATOR: 'false' })
  process.chdir(here)
  const url = (p: string) => `http://127.0.0.1:${s.port}${p}`
  const post = async (path: string, body: unknown, token?: string) => {
    const r = await fetch(url(path), {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(token ? { authorization: token } : {}) },
      body: JSON.stringify(body),
    })
    if (r.status !== 200) throw new Error(`${name} ${path} answered ${r.status}: ${await r.text()}`)
    return r.json() as Promise<Record<string, unknown>>
  }
  const manager = (await post('/manager/sign/in', { login: 1, password: 'manager-pass-1' })).__token as string
  const dealer = (await post('/manager/sign/in', { login: 3, password: 'dealer-pass-1' })).__token as string
  const user = (await post('/sign/in', { login: 100001, password: 'demo-pass-1' })).__token as string
  await post('/market/quotes', { ticks: [{ symbol: 'BTCUSD', bid: 65000, ask: 65020 }] }, dealer)
  const logins: number[] = []
  for (let i = 0; i < 50; i++)
    logins.push(
      (await post('/manager/accounts', { group: 'demo\\USD', password: 'bench-pass-1' }, manager))
        .login as number,
    )
  const script = openScript(logins, await accountTokens(url(''), logins, 'bench-pass-1'))
  const routes = [
    { name: 'GET /account/me', target: url('/account/me?login=100001'), headers: { authorization: user } },
    {
      name: 'cached watch list',
      target: url('/market/watch/list?login=100001&prefix='),
      headers: { authorization: user },
    },
    { name: 'POST /trade/open', target: url('/trade/open'), script },
  ]
  return { stop: s.stop, routes }
}

const servers = [
  { name: 'other', ...(await start(resolve(other), 'other')) },
  { name: 'this', ...(await start(here, 'this')) },
]
for (let r = 0; r < servers[0].routes.length; r++) {
  const windows: Record<string, string[]> = { other: [], this: [] }
  const rps: Record<string, number> = { other: 0, this: 0 }
  for (const s of servers) await wrk(s.routes[r].target, { ...s.routes[r], core: 1, seconds: 4, connections })
  for (let i = 0; i < rounds; i++)
    for (const s of i % 2 ? [...servers].reverse() : servers) {
      const w = await wrk(s.routes[r].target, { ...s.routes[r], core: 1, seconds, connections })
      if (w.non2xx > 0) throw new Error(`${s.name}: ${w.non2xx} non-2xx answers`)
      windows[s.name].push(`${Math.round(w.rps)} (p99 ${w.p99})`)
      rps[s.name] += w.rps
    }
  console.log(`${servers[0].routes[r].name}`)
  console.log(`  other  ${windows.other.join('  ')}`)
  console.log(`  this   ${windows.this.join('  ')}`)
  console.log(`  this / other ${(rps.this / rps.other).toFixed(3)}`)
}
for (const s of servers) await s.stop()
