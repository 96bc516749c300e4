// A typed client for TypeScript users (issue 28): Eden treaty over the service's route types (src/main/
// app-type.ts), against a real server over a socket. `npm test` type-checks this file: the lines that
// read a field compile only because the client knows the server's answer.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { treaty } from '@elysiajs/eden'
import type { App } from '../../src/main/app-type'
import { type RealServer, serverDir, startRealServer } from '../support/server'

const home = serverDir()
let server: RealServer

beforeAll(async () => {
  server = await startRealServer(home.dir, { QUOTE_SIMULATOR: '0' })
}, 60_000)
afterAll(async () => {
  await server.stop()
  home.remove()
})

test('sign in, read the profile and the balance, open and list a trade, read an error: all typed', async () => {
  const api = treaty<App>(server.url)
  const signIn = await api.sign.in.post({ login: 100001, password: 'demo-pass-1' })
  expect(signIn.status).toBe(200)
  const token: string = signIn.data!.__token
  const headers = { authorization: token }

  const me = await api.account.me.get({ headers })
  const name: string = me.data!.name
  expect(name.length).toBeGreaterThan(0)

  const balance = await api.balance.me.get({ query: { login: 100001 }, headers })
  const free: number = balance.data!.margin_free
  expect(typeof free).toBe('number')

  const staff = await api.manager.sign.in.post({ login: 3, password: 'dealer-pass-1' })
  const quotes = await api.market.quotes.post(
    { ticks: [{ symbol: 'EURUSD', bid: 1.1, ask: 1.1002 }] },
    { headers: { authorization: staff.data!.__token } },
  )
  expect(quotes.status).toBe(200)
  const open = await api.trade.open.post(
    { login: 100001, symbol: 'EURUSD', cmd: 0, volume: 1, sl: 0, tp: 0 },
    { headers },
  )
  expect(open.status).toBe(200)
  const ticket: number = open.data!.order
  const list = await api.trade.list.get({ query: { login: 100001 }, headers })
  expect(list.data!.positions.some((p) => p.order === ticket)).toBe(true)

  // an error answer is data too: its status and the service's error body
  const wrong = await api.sign.in.post({ login: 100001, password: 'wrong-pass-1' })
  expect(wrong.status).toBe(403)
  expect((wrong.error!.value as unknown as { error: string }).error).toBe('USER_NOT_FOUND_OR_INCORRECT')
}, 60_000)
