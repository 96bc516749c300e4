// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
// copytrade edge probe 2: a subscription made, changed or resumed at the edge opened a copy of every
// position its master held inside the request (about 16 subrequests each): past ~60 positions one Worker
// invocation ran out of its 1,000 subrequests, the customer got a 500 after some copies had opened and
// links stayed 'opening' until their lease lapsed. At the edge a resync opens RESYNC_OPENS_IN_REQUEST.edge
// copies in the request and leaves the rest pending for copytrade.reconcile (20 a run at the edge). The
// makeTestApp app is a Bun server: its module's context is given the edge flag here, as the Worker's is
// (tests/workers/workers.test.ts runs the whole request under wrangler and counts its subrequests).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { AccountsPort } from '../../src/modules/accounts'
import type { CopyCtx } from '../../src/modules/copytrade/context'
import { reconcile } from '../../src/modules/copytrade/copier/reconcile'
import { RESYNC_OPENS_IN_REQUEST } from '../../src/modules/copytrade/copier/resync'
import { transition } from '../../src/modules/copytrade/service/subscription-status'
import { MarketPort } from '../../src/modules/market'
import { TradingPort } from '../../src/modules/trading'
import { copyFeeWorld } from '../support/copy-fees'

const MASTER_POSITIONS = 70

/** `n` small EURUSD buys of `login`, ten at a time on one session. */
async function openMany(w: Awaited<ReturnType<typeof copyFeeWorld>>, login: number, n: number) {
  const token = await w.tradeToken(login)
  for (let i = 0; i < n; i += 10) {
    const rs = await Promise.all(
      Array.from({ length: Math.min(10, n - i) }, () =>
        w.post('/trade/open', { login, symbol: 'EURUSD', cmd: 0, volume: 1, sl: 0, tp: 0 }, token),
      ),
    )
    expect(rs).toHaveLength(Math.min(10, n - i))
  }
}

describe('a resync at the edge opens a bounded number of copies in the request', () => {
  let w: Awaited<ReturnType<typeof copyFeeWorld>>
  let edge: CopyCtx
  beforeAll(async () => {
    w = await copyFeeWorld()
    // the copier's context as the Worker builds it (src/modules/copytrade/index.ts with k.edge)
    edge = {
      ...w.t.ctx,
      edge: true,
      accounts: w.t.ports.get(AccountsPort),
      market: w.t.ports.get(MarketPort),
      trading: w.t.ports.get(TradingPort),
      limit: (fn) => fn(),
      forgetManual: async () => {},
    }
  })
  afterAll(() => w?.t.close())

  const links = async (sub: number) =>
    Object.fromEntries(
      (
        await w.t.ctx.db.execute({
          sql: 'select status, count(*) as n from copy_links where subscription_id = ? group by status',
          args: [sub],
        })
      ).rows.map((r) => [r.status as string, Number(r.n)]),
    )

  test(`resumed at the edge with ${MASTER_POSITIONS} master positions: ${RESYNC_OPENS_IN_REQUEST.edge} copies in the request, the rest pending, then opened by copytrade.reconcile`, async () => {
    await w.price(1.1)
    const masterLogin = await w.newAccount(1_000_000)
    const master = await w.master(masterLogin, { reward_type: 3, percent: 10 })
    const follower = await w.newAccount(1_000_000)
    await w.t.settle()
    const sub = await w.follow(follower, master, { volume_mode: 1, volume_param: 1, max_positions: 0 })
    expect((await w.request('POST', `/copytrade/subscription/${sub}/pause`, {})).status).toBe(200)
    await openMany(w, masterLogin, MASTER_POSITIONS)
    await w.t.settle()
    expect(await w.positions(follower)).toHaveLength(0)
    // the resume's resync, as the Worker runs it
    await transition({
      ctx: edge,
      subscription: { id: sub, status: 1 },
      input: { action: 'resume', reason: '' },
    })
    expect(await w.positions(follower)).toHaveLength(RESYNC_OPENS_IN_REQUEST.edge)
    expect(await links(sub)).toEqual({
      open: RESYNC_OPENS_IN_REQUEST.edge,
      pending: MASTER_POSITIONS - RESYNC_OPENS_IN_REQUEST.edge,
    })
    // the job picks the rest up once they are PENDING_GRACE_MS old: at the edge 20 a run
    w.clock.advance(3_500)
    await w.price(1.1)
    await reconcile(edge)
    expect(await w.positions(follower)).toHaveLength(RESYNC_OPENS_IN_REQUEST.edge + 20)
    // and on the Bun engine every one left
    await w.t.runJob('copytrade.reconcile')
    expect(await w.positions(follower)).toHaveLength(MASTER_POSITIONS)
    expect(await links(sub)).toEqual({ open: MASTER_POSITIONS })
    // each copied once, by the resync's decision
    const copies = (await w.request('GET', `/copytrade/subscription/${sub}/copies?result=copied&limit=500`))
      .json.rows as { action: string }[]
    expect(copies.filter((c) => c.action === 'open')).toHaveLength(MASTER_POSITIONS)
  }, 120_000)

  test('on a Bun server a resync of a few positions is still copied whole within the request', async () => {
    await w.price(1.1)
    const masterLogin = await w.newAccount(1_000_000)
    const master = await w.master(masterLogin, { reward_type: 3, percent: 10 })
    const follower = await w.newAccount(1_000_000)
    await w.t.settle()
    await openMany(w, masterLogin, 50)
    await w.t.settle()
    const sub = await w.follow(follower, master, { volume_mode: 1, volume_param: 1, max_positions: 0 })
    expect(await w.positions(follower)).toHaveLength(50)
    expect(await links(sub)).toEqual({ open: 50 })
  }, 120_000)
})
