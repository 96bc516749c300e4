// A retry after a crash takes effect once (issue 29): a real server is killed with SIGKILL in the middle
// of a burst of opens, then of closes, each sent with its Idempotency-Key; after the restart every
// request is sent again with its key. Each open leaves exactly one order, each close closes once.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { createClient } from '@libsql/client'
import { type RealServer, serverDir, signIn, startRealServer } from '../support/server'

const home = serverDir()
let server: RealServer
const LOGIN = 100001

beforeAll(async () => {
  server = await startRealServer(home.dir)
}, 60_000)
afterAll(async () => {
  await server?.stop()
  home.remove()
})

async function send(method: string, path: string, token: string, body: unknown, key: string) {
  try {
    const res = await fetch(`${server.url}${path}`, {
      method,
      headers: { authorization: token, 'content-type': 'application/json', 'idempotency-key': key },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(10_000),
    })
    return { status: res.status, json: (await res.json().catch(() => null)) as any }
  } catch {
    return { status: 0, json: null }
  }
}

/** Sends every request, 8 at a time, and kills the server once `killAfter` have been answered. */
async function burstWithKill(requests: (() => Promise<{ status: number }>)[], killAfter: number) {
  const answers: { status: number }[] = new Array(requests.length)
  let next = 0
  let answered = 0
  let killed: Promise<void> | null = null
  const worker = async () => {
    while (next < requests.length) {
      const i = next++
      answers[i] = await requests[i]!()
      if (answers[i]!.status > 0 && ++answered === killAfter) killed ??= server.kill()
    }
  }
  await Promise.all(Array.from({ length: 8 }, worker))
  await killed
  return answers
}

const staff = () => signIn(server.url, '/manager/sign/in', { login: 3, password: 'dealer-pass-1' })
const tick = (dealer: string) =>
  fetch(`${server.url}/market/quotes`, {
    method: 'POST',
    headers: { authorization: dealer, 'content-type': 'application/json' },
    body: JSON.stringify({ ticks: [{ symbol: 'BTCUSD', bid: 43_000, ask: 43_030 }] }),
  })

const db = () => createClient({ url: `file:${join(home.dir, 'app.db')}` })

describe('SIGKILL in a burst, then every request again with its key', () => {
  test('each open takes effect once, each close once', async () => {
    const token = await signIn(server.url, '/sign/in', { login: LOGIN, password: 'demo-pass-1' })
    const dealer = await signIn(server.url, '/manager/sign/in', { login: 3, password: 'dealer-pass-1' })
    expect((await tick(dealer)).status).toBe(200)
    const N = 120
    const open = (i: number, t: string) => () =>
      send(
        'POST',
        '/trade/open',
        t,
        { login: LOGIN, cmd: 0, volume: 1, symbol: 'BTCUSD', sl: 0, tp: 0, comment: 'kill-burst' },
        `kill-open-${i}`,
      )
    const first = await burstWithKill(
      Array.from({ length: N }, (_, i) => open(i, token)),
      40,
    )
    const unanswered = first.filter((a) => a.status === 0).length
    server = await startRealServer(home.dir)
    const token2 = await signIn(server.url, '/sign/in', { login: LOGIN, password: 'demo-pass-1' })
    // a restarted process has only the quotes saved before the kill: the feed sends the price again
    expect((await tick(await staff())).status).toBe(200)
    // every request again, answered or not, as a client that cannot tell
    const again = await Promise.all(Array.from({ length: N }, (_, i) => open(i, token2)()))
    expect(again.filter((a) => a.status !== 200)).toEqual([])
    const c = db()
    const orders = await c.execute("select ticket from orders where comment = 'kill-burst'")
    expect(orders.rows).toHaveLength(N)
    const tickets = new Set(again.map((a) => a.json.order as number))
    expect(tickets.size).toBe(N)
    console.log(
      `[kill] opens: ${unanswered} of ${N} unanswered at the kill; after retries ${N} orders, one per key`,
    )

    // closes: the same, each position closed once (a retry of a committed close answers as a repeat)
    const list = [...tickets]
    const close = (ticket: number, t: string) => () =>
      send('DELETE', '/trade/close', t, { order: ticket }, `kill-close-${ticket}`)
    const closes = await burstWithKill(
      list.map((t) => close(t, token2)),
      40,
    )
    const lost = closes.filter((a) => a.status === 0).length
    server = await startRealServer(home.dir)
    const token3 = await signIn(server.url, '/sign/in', { login: LOGIN, password: 'demo-pass-1' })
    expect((await tick(await staff())).status).toBe(200)
    const closedAgain = await Promise.all(list.map((t) => close(t, token3)()))
    expect(closedAgain.filter((a) => a.status !== 200)).toEqual([])
    const states = await c.execute(
      "select state, count(*) as n from orders where comment = 'kill-burst' group by state",
    )
    expect(states.rows.map((r) => [r.state, Number(r.n)])).toEqual([['closed', N]])
    // one closing result per position in the ledger, and balance = ledger
    const perTicket = await c.execute(`select ticket, count(*) as n from balance_operations
      where login = 100001 and op = 'OP_TRADE' and ticket in (${list.join(',')}) group by ticket`)
    expect(perTicket.rows.map((r) => Number(r.n))).toEqual(list.map(() => 1))
    const off =
      await c.execute(`select a.login from accounts a left join balance_operations o on o.login = a.login
      group by a.login having a.balance != coalesce(sum(o.amount), 0)`)
    expect(off.rows).toEqual([])
    c.close()
    console.log(`[kill] closes: ${lost} of ${N} unanswered at the kill; after retries each closed once`)
  }, 120_000)
})
