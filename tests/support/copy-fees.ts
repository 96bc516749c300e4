import { ManualClock } from '../../src/kernel/clock'
import { makeTestApp, type TestApp } from './app'

export const DAY = 86_400_000

type Row = { id: number; reward_name: string; amount: number; status: string; note?: string; base?: number }

/** The customer `token` makes `login` a follower and subscribes it to the master on its current terms. */
export async function followMaster(
  t: TestApp,
  token: string,
  login: number,
  masterId: number,
  settings: object = {},
) {
  await t.request('POST', '/copytrade/follower', { token, body: { login } })
  const { policy_version } = (await t.request('GET', `/copytrade/masters/${masterId}`, { token })).json
  const r = await t.request('POST', '/copytrade/subscription', {
    token,
    body: { follower_login: login, master_id: masterId, policy_version, ...settings },
  })
  if (r.status !== 200) throw new Error(`/copytrade/subscription: ${r.status} ${r.text}`)
  return r.json.id as number
}

/**
 * A test app on a manual clock with what copy trading's fee tests drive: REAL USD accounts of the demo
 * customer, EURUSD quotes posted by the dealer, masters, subscriptions, trades, and the fee views.
 */
export async function copyFeeWorld(start = Date.UTC(2026, 10, 23, 8, 0, 0)) {
  const clock = new ManualClock(start)
  const t: TestApp = await makeTestApp({ clock })
  const s = { demo: '', staff: '', dealer: '', customerId: 0, eurusd: 1.1 }
  const signIn = async () => {
    s.demo = await t.customerToken()
    s.staff = await t.staffToken(2, 'admin-pass-1')
    s.dealer = await t.staffToken(3, 'dealer-pass-1')
  }
  const quotes = () =>
    t.request('POST', '/market/quotes', {
      token: s.dealer,
      body: { ticks: [{ symbol: 'EURUSD', bid: s.eurusd, ask: s.eurusd + 0.0002 }] },
    })
  await signIn()
  s.customerId = (await t.request('GET', '/customer/me', { token: s.demo })).json.id
  await quotes()
  await t.settle()
  const request = (method: string, path: string, body?: unknown, token = s.demo) =>
    t.request(method, path, { token, body })
  const post = async (path: string, body: unknown, token = s.demo) => {
    const r = await t.request('POST', path, { token, body })
    if (r.status !== 200) throw new Error(`${path}: ${r.status} ${r.text}`)
    return r.json
  }
  const newAccount = async (deposit: number) => {
    const a = await post(
      '/manager/accounts',
      { group: 'real\\USD', password: 'fees-pass-1', customer_id: s.customerId },
      s.staff,
    )
    if (deposit > 0)
      await post(`/manager/accounts/${a.login}/balance`, { type: 'deposit', amount: deposit }, s.staff)
    return a.login as number
  }
  const master = async (login: number, reward_policy: object) =>
    (
      await post('/copytrade/master', {
        login,
        name: `M${login}`,
        reward_policy,
        allowed_follower_modes: 2,
        public: 1,
      })
    ).id as number
  const follow = (login: number, masterId: number, settings: object = {}) =>
    followMaster(t, s.demo, login, masterId, settings)
  const tradeToken = (login: number) => t.userToken(login, 'fees-pass-1')
  const openTrade = async (login: number, cmd: number, volume: number) =>
    post('/trade/open', { login, symbol: 'EURUSD', cmd, volume, sl: 0, tp: 0 }, await tradeToken(login))
  const closeTrade = async (login: number, order: number) =>
    t.request('DELETE', '/trade/close', { token: await tradeToken(login), body: { order } })
  const positions = async (login: number) =>
    (await t.request('GET', `/trade/list?login=${login}`, { token: await tradeToken(login) })).json
      .positions as { order: number }[]
  const rewardsOf = async (sub: number) =>
    (await t.request('GET', `/copytrade/subscription/${sub}/rewards`, { token: s.demo })).json.rows as Row[]
  const preview = async (sub: number) =>
    (await t.request('GET', `/copytrade/subscription/${sub}/fees`, { token: s.demo })).json
  /** Moves time; sessions outlive no month, so the tokens are taken again. */
  const advance = async (ms: number) => {
    clock.advance(ms)
    await signIn()
    await quotes()
  }
  const price = async (p: number) => {
    s.eurusd = p
    await quotes()
  }
  return {
    t,
    clock,
    s,
    request,
    post,
    newAccount,
    master,
    follow,
    tradeToken,
    openTrade,
    closeTrade,
    positions,
    rewardsOf,
    preview,
    advance,
    price,
  }
}
