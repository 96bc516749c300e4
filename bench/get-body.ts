// Can the spec's GET /scripts body be read (issue 27)? A GET with a JSON body sent over a raw socket to
// Bun.serve and to Bun's node:http server, and the throughput of each for a small JSON answer (wrk,
// server on core 0, wrk on core 1, loopback). `bun bench/get-body.ts` (BENCH_SECONDS, default 5).
import { createServer } from 'node:http'
import { connect } from 'node:net'
import { freePort } from '../tests/support/ports'
import { wrk } from './lib'

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5)
const answer = JSON.stringify({ rows: [] })

/** Sends `GET /scripts` with an 11-byte JSON body; the server answers the length it received. */
function getWithBody(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const body = '{"login":1}'
    const s = connect(port, '127.0.0.1', () =>
      s.write(
        `GET /scripts HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
      ),
    )
    let out = ''
    s.on('data', (d) => {
      out += d
    })
    s.on('end', () => resolve(/len=(\d+)/.exec(out)?.[1] ?? '?'))
    s.on('error', reject)
  })
}

const bunPort = await freePort()
const bun = Bun.serve({
  port: bunPort,
  hostname: '127.0.0.1',
  async fetch(req) {
    if (new URL(req.url).pathname === '/scripts') return new Response(`len=${(await req.text()).length}`)
    return new Response(answer, { headers: { 'content-type': 'application/json' } })
  },
})
const nodePort = await freePort()
const node = createServer((req, res) => {
  if (req.url === '/scripts') {
    let n = 0
    req.on('data', (c) => {
      n += c.length
    })
    req.on('end', () => res.end(`len=${n}`))
    return
  }
  res.setHeader('content-type', 'application/json')
  res.end(answer)
})
await new Promise<void>((r) => node.listen(nodePort, '127.0.0.1', r))
try {
  const bunLen = await getWithBody(bunPort)
  const nodeLen = await getWithBody(nodePort)
  const a = await wrk(`http://127.0.0.1:${bunPort}/`, { core: 1, seconds: SECONDS, connections: 50 })
  const b = await wrk(`http://127.0.0.1:${nodePort}/`, { core: 1, seconds: SECONDS, connections: 50 })
  console.log('| Server | GET body bytes received (of 11) | req/s | p99 |')
  console.log('|---|---|---|---|')
  console.log(`| Bun.serve | ${bunLen} | ${Math.round(a.rps)} | ${a.p99} |`)
  console.log(`| node:http on Bun | ${nodeLen} | ${Math.round(b.rps)} | ${b.p99} |`)
  console.log(`node:http / Bun.serve throughput: ${(b.rps / a.rps).toFixed(2)}`)
} finally {
  bun.stop(true)
  node.close()
}
