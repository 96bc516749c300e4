// Bytes allocated per request (garbage collection is where a trade open's tail latency goes): the app in
// process (real libSQL file, requests through app.handle, 50 at a time like 50 connections) under JSC's GC
// log; the bytes allocated are summed from the heap sizes before and after each collection in the window.
// Prints KB per request for the cached watch list and POST /trade/open, next to raw Bun.serve's figure
// measured the same way on a Response.json.
import { spawn } from 'bun'

const ROUNDS = Number(process.env.ALLOC_ROUNDS ?? 3000)
const BATCH = 50
const mode = process.env.ALLOC_CHILD

if (mode) await child(mode)
else {
  for (const m of ['raw', 'watch', 'open']) {
    const proc = spawn(['bun', import.meta.path], {
      env: { ...process.env, ALLOC_CHILD: m, BUN_JSC_logGC: '1' },
      stdout: 'inherit',
      stderr: 'pipe',
    })
    const log = await new Response(proc.stderr).text()
    if ((await proc.exited) !== 0) throw new Error(`${m} failed:\n${log.slice(-2000)}`)
    const { gcs, bytes } = allocated(log)
    const requests = ROUNDS * BATCH
    console.log(
      `${(m === 'raw' ? 'Response.json' : m === 'watch' ? 'GET /market/watch/list' : 'POST /trade/open').padEnd(24)} ${(bytes / requests / 1024).toFixed(2).padStart(7)} KB/request   (${gcs} collections, ${(bytes / 2 ** 20).toFixed(0)} MB over ${requests} requests)`,
    )
  }
}

/**
 * Sum of (heap size at a collection's start - heap size after the previous one) inside the MARK window,
 * per heap (a worker thread, such as the WAL checkpointer, has its own); the main thread's is the largest.
 */
function allocated(log: string) {
  let on = false
  const heaps = new Map<string, { after: number; bytes: number; gcs: number }>()
  for (const line of log.split('\n')) {
    if (line.includes('MARK START')) on = true
    if (line.includes('MARK END')) on = false
    const id = /GC<(0x[0-9a-f]+)>/.exec(line)?.[1]
    if (!id) continue
    const h = heaps.get(id) ?? { after: -1, bytes: 0, gcs: 0 }
    heaps.set(id, h)
    const start = /START M (\d+)kb/.exec(line)
    if (start && on && h.after >= 0) {
      h.bytes += (Number(start[1]) - h.after) * 1024
      h.gcs++
    }
    const end = /=> (\d+)kb, p=/.exec(line)
    if (end) h.after = Number(end[1])
  }
  return [...heaps.values()].reduce((a, b) => (b.bytes > a.bytes ? b : a), { after: 0, bytes: 0, gcs: 0 })
}

async function child(m: string) {
  let next: () => Promise<unknown>
  let close = async () => {}
  if (m === 'raw') {
    next = () => Response.json({ ok: true, n: 1 }).text()
  } else {
    const { makeTestApp } = await import('../tests/support/app')
    const t = await makeTestApp()
    close = () => t.close()
    const post = async (path: string, body: unknown, token?: string) =>
      (await t.request('POST', path, { body, token })).json
    const manager = (await post('/manager/sign/in', { login: 1, password: 'manager-pass-1' })).__token
    const dealer = (await post('/manager/sign/in', { login: 3, password: 'dealer-pass-1' })).__token
    const user = (await post('/sign/in', { login: 100001, password: 'demo-pass-1' })).__token
    await post('/market/quotes', { ticks: [{ symbol: 'BTCUSD', bid: 65000, ask: 65020 }] }, dealer)
    await post('/market/watch', { login: 100001, symbol: 'BTCUSD' }, user)
    const logins: number[] = []
    for (let i = 0; i < 100; i++)
      logins.push(
        (await post('/manager/accounts', { group: 'demo\\USD', password: 'bench-pass-1' }, manager)).login,
      )
    let k = 0
    const request = () =>
      m === 'watch'
        ? new Request('http://localhost/market/watch/list?login=100001&prefix=', {
            headers: { host: 'localhost', authorization: user },
          })
        : new Request('http://localhost/trade/open', {
            method: 'POST',
            headers: { host: 'localhost', 'content-type': 'application/json', authorization: dealer },
            body: `{"login":${logins[k++ % logins.length]},"cmd":0,"volume":1,"symbol":"BTCUSD","sl":0,"tp":0}`,
          })
    next = async () => {
      const res = await t.app.handle(request())
      if (res.status !== 200) throw new Error(`${m} answered ${res.status}: ${await res.text()}`)
      return res.text()
    }
  }
  const round = () => Promise.all(Array.from({ length: BATCH }, next))
  for (let i = 0; i < 200; i++) await round()
  console.error('MARK START')
  for (let i = 0; i < ROUNDS; i++) await round()
  console.error('MARK END')
  await close()
}
