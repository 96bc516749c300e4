// Affiliate postbacks (issue 30) against a receiver on loopback: signed `t=…,v1=…` with a key id (rotation
// with an overlap), only to hosts on the brand's allowlist, retried with backoff, dead after MAX_ATTEMPTS,
// and the endpoint disabled after 20 failures in a row with an event for staff.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createHmac } from 'node:crypto'
import { lookup } from 'node:dns/promises'
import { hostname } from 'node:os'
import { and, eq, sql } from 'drizzle-orm'
import { ManualClock } from '../../src/kernel/clock'
import { outbox } from '../../src/kernel/events/schema'
import { customers } from '../../src/modules/accounts/schema'
import { isInternalAddress, isInternalHost } from '../../src/modules/affiliate/domain/internal-address'
import { postbacks } from '../../src/modules/affiliate/schema'
import { CashierCredited } from '../../src/modules/cashier'
import { makeTestApp, type TestApp } from '../support/app'

const clock = new ManualClock(Date.UTC(2026, 10, 24, 9, 0, 0))
let t: TestApp
let staff: string
let receiver: ReturnType<typeof Bun.serve>
let failWith = 0
const got: { headers: Headers; body: string }[] = []
/** What the receiver does besides answering (a slow endpoint). */
let onSend: ((id: number) => Promise<void>) | null = null
let affiliateId: number
let n = 0

async function referredCustomer() {
  const email = `pb-${++n}@example.com`
  await t.request('POST', '/customer/register', {
    body: { email, password: 'pb-pass-1', name: 'PB', attribution: { link: 'pb-link' } },
  })
  const [c] = await t.ctx.db.select().from(customers).where(eq(customers.email, email))
  return c.id
}
const deposit = (customer_id: number, transaction_id: number) =>
  t.ctx.uow.run(async (_tx, w) =>
    w.emit(CashierCredited, 1, {
      transaction_id,
      customer_id,
      login: 100001,
      method: 'card',
      provider: 'sandbox',
      amount_minor: 2500,
      fee_minor: 0,
      currency: 'USD',
    }),
  )
const verify = (secret: string, header: string, body: string) => {
  const m = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(header)
  return !!m && createHmac('sha256', secret).update(`${m[1]}.${body}`).digest('hex') === m[2]
}
const send = async () => {
  await t.settle()
  await t.runJob('affiliate.postbacks')
}

beforeAll(async () => {
  receiver = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(req) {
      got.push({ headers: req.headers, body: await req.text() })
      await onSend?.(Number(req.headers.get('x-postback-id')))
      return new Response(failWith ? 'no' : 'ok', { status: failWith || 200 })
    },
  })
  // the receiver is on this machine: allowed explicitly, as in development
  t = await makeTestApp({ clock, env: { AFFILIATE_POSTBACK_PRIVATE: 'true' } })
  staff = await t.staffToken()
  const hosts = await t.request('PUT', '/manager/affiliate-settings', {
    token: staff,
    // the receiver's port named: a bare host allows only ports 80 and 443
    body: { postback_hosts: [`127.0.0.1:${receiver.port}`, 'localhost'] },
  })
  expect(hosts.status).toBe(200)
  const a = await t.request('POST', '/manager/affiliates', {
    token: staff,
    body: {
      email: 'pb@example.com',
      code: 'PBPARTNER',
      password: 'pb-pass-1',
      postback_url: `http://127.0.0.1:${receiver.port}/hook`,
    },
  })
  expect(a.status).toBe(200)
  affiliateId = a.json.id
  expect(
    (
      await t.request('POST', '/manager/affiliate-links', {
        token: staff,
        body: { affiliate_id: affiliateId, code: 'pb-link' },
      })
    ).status,
  ).toBe(200)
})
afterAll(async () => {
  await t.close()
  receiver.stop(true)
})

describe('postbacks aimed inside the network (no AFFILIATE_POSTBACK_PRIVATE)', () => {
  test('internal hosts are refused when saved, and at send time after resolution', async () => {
    const strict = await makeTestApp()
    try {
      const s = await strict.staffToken()
      for (const h of [
        '169.254.169.254',
        '10.0.0.1',
        '0.0.0.0',
        '127.0.0.1',
        'localhost',
        'metadata.google.internal',
        '192.168.1.10',
      ]) {
        const r = await strict.request('PUT', '/manager/affiliate-settings', {
          token: s,
          body: { postback_hosts: [h] },
        })
        expect([r.status, r.json.error], h).toEqual([400, 'POSTBACK_HOST_NOT_ALLOWED'])
      }
      // an endpoint saved before the rule (written directly) is refused at send: nothing reaches it
      await strict.ctx.db.run(
        sql`update affiliate_settings set postback_hosts = ${JSON.stringify([`localhost:${receiver.port}`])}`,
      )
      await strict.ctx.db.run(
        sql`update affiliates set postback_url = ${`http://localhost:${receiver.port}/hook`} where code = 'DEMOPARTNER'`,
      )
      await strict.request('POST', '/manager/affiliates/1/postback-keys', { token: s })
      const before = got.length
      await strict.ctx.db.run(
        sql`insert into affiliate_postbacks (brand_id, affiliate_id, conversion_id, body, next_at, created_at)
            values (1, 1, 1, '{}', 0, 0)`,
      )
      await strict.runJob('affiliate.postbacks')
      expect(got.length).toBe(before)
      const [pb] = (await strict.ctx.db.all(
        sql`select last_error from affiliate_postbacks order by id desc limit 1`,
      )) as { last_error: string }[]
      expect(pb!.last_error).toContain('internal address')
      const failures = async () =>
        (
          (await strict.ctx.db.all(
            sql`select postback_failures as n, postback_enabled as on_ from affiliates where id = 1`,
          )) as { n: number; on_: number }[]
        )[0]!
      // an internal host written as such was saved while the rule allowed it: a setting, never counted
      expect(await failures()).toEqual({ n: 0, on_: 1 })
      // a name that resolves inside the network (this machine's own name) is the endpoint's doing: it
      // counts toward disabling the endpoint, and twenty in a row disable it with the event for staff
      const name = hostname().toLowerCase()
      const resolved = (await lookup(name, { all: true })).map((x) => x.address)
      expect(resolved.length).toBeGreaterThan(0)
      expect(isInternalHost(name)).toBe(false)
      expect(resolved.every(isInternalAddress)).toBe(true)
      await strict.ctx.db.run(
        sql`update affiliate_settings set postback_hosts = ${JSON.stringify([`${name}:${receiver.port}`])}`,
      )
      await strict.ctx.db.run(
        sql`update affiliates set postback_url = ${`http://${name}:${receiver.port}/hook`} where code = 'DEMOPARTNER'`,
      )
      for (let i = 0; i < 20; i++)
        await strict.ctx.db.run(
          sql`insert into affiliate_postbacks (brand_id, affiliate_id, conversion_id, body, next_at, created_at)
              values (1, 1, 1, '{}', 0, 0)`,
        )
      await strict.runJob('affiliate.postbacks')
      expect(await failures()).toEqual({ n: 20, on_: 0 })
      expect(got.length).toBe(before)
      const [a] = (await strict.ctx.db.all(
        sql`select postback_disabled_reason as reason from affiliates where id = 1`,
      )) as { reason: string }[]
      expect(a!.reason).toContain('resolves to the internal address')
    } finally {
      await strict.close()
    }
  })
})

describe('postbacks', () => {
  test('only to a host on the brand allowlist', async () => {
    for (const postback_url of [
      'http://evil.example/hook',
      'ftp://127.0.0.1/x',
      'http://user:pw@127.0.0.1/x',
    ])
      expect(
        (
          await t.request('PATCH', `/manager/affiliates/${affiliateId}`, {
            token: staff,
            body: { postback_url },
          })
        ).json.error,
      ).toBe('POSTBACK_HOST_NOT_ALLOWED')
  })

  test('signed with the newest key; the receiver checks it with the key id; rotation keeps the old key known', async () => {
    const k1 = await t.request('POST', `/manager/affiliates/${affiliateId}/postback-keys`, { token: staff })
    expect(k1.json.secret.length).toBeGreaterThan(30)
    const id = await referredCustomer()
    await send()
    expect(got).toHaveLength(1)
    const first = got[0]
    expect(first.headers.get('x-postback-key-id')).toBe(k1.json.key_id)
    expect(verify(k1.json.secret, first.headers.get('x-postback-signature')!, first.body)).toBe(true)
    expect(verify('another-secret', first.headers.get('x-postback-signature')!, first.body)).toBe(false)
    expect(JSON.parse(first.body)).toMatchObject({
      type: 'conversion',
      conversion: { kind: 'registration', customer_id: id, affiliate_id: affiliateId },
    })
    // the secret is never shown again
    const a = await t.request('GET', `/manager/affiliates/${affiliateId}`, { token: staff })
    expect(a.text).not.toContain(k1.json.secret)
    expect(a.json.postback_key_ids).toEqual([k1.json.key_id])

    clock.advance(1_000)
    const k2 = await t.request('POST', `/manager/affiliates/${affiliateId}/postback-keys`, { token: staff })
    await deposit(id, 5001)
    await send()
    const signed = got.slice(1)
    expect(signed.length).toBe(2) // first_deposit and deposit
    for (const g of signed) {
      expect(g.headers.get('x-postback-key-id')).toBe(k2.json.key_id)
      expect(verify(k2.json.secret, g.headers.get('x-postback-signature')!, g.body)).toBe(true)
    }
    expect(
      (await t.request('GET', `/manager/affiliates/${affiliateId}`, { token: staff })).json.postback_key_ids,
    ).toEqual([k2.json.key_id, k1.json.key_id])
    expect(
      (
        await t.request('DELETE', `/manager/affiliates/${affiliateId}/postback-keys/${k1.json.key_id}`, {
          token: staff,
        })
      ).status,
    ).toBe(200)
  })

  test('a pass slower than a claim holds each claim while it sends (another instance could take it)', async () => {
    // a hostile client's probe: claims were dated from the start of the pass, so past 30 s what it claimed
    // was free for another instance's pass, which sent the same postbacks again
    const id = await referredCustomer()
    await deposit(id, 5101)
    await t.settle()
    const margins: number[] = []
    onSend = async (pb) => {
      const [row] = await t.ctx.db.select().from(postbacks).where(eq(postbacks.id, pb))
      margins.push(row!.leaseUntil - clock.now())
      clock.advance(31_000) // each send takes longer than a claim lasts
    }
    try {
      await send()
    } finally {
      onSend = null
    }
    expect(margins.length).toBe(3) // registration, first_deposit, deposit
    expect(margins.every((m) => m > 0)).toBe(true)
    staff = await t.staffToken()
  })

  test('failures retry with backoff, die after ten attempts, and twenty in a row disable the endpoint', async () => {
    failWith = 500
    // a tracker's token in the query: the notice of the disabled endpoint never carries it
    const secretUrl = `http://127.0.0.1:${receiver.port}/hook?token=tracker-s3cret&cid={click_id}`
    expect(
      (
        await t.request('PATCH', `/manager/affiliates/${affiliateId}`, {
          token: staff,
          body: { postback_url: secretUrl },
        })
      ).status,
    ).toBe(200)
    const id = await referredCustomer()
    await t.settle()
    const [p] = await t.ctx.db.select().from(postbacks).where(eq(postbacks.status, 'pending'))
    for (let i = 0; i < 10; i++) {
      await send()
      // not due again before its backoff
      const before = got.length
      await send()
      expect(got.length).toBe(before)
      clock.advance(3_600_000)
      staff = await t.staffToken()
    }
    const [dead] = await t.ctx.db.select().from(postbacks).where(eq(postbacks.id, p.id))
    expect(dead).toMatchObject({ status: 'dead', attempts: 10, lastError: 'HTTP 500' })
    // ten more failures in a row (two conversions of a new deposit, five rounds) reach twenty
    await deposit(id, 5002)
    for (let i = 0; i < 5; i++) {
      await send()
      clock.advance(3_600_000)
    }
    staff = await t.staffToken()
    const a = await t.request('GET', `/manager/affiliates/${affiliateId}`, { token: staff })
    expect(a.json).toMatchObject({ postback_enabled: false, postback_failures: 20 })
    expect(a.json.postback_disabled_reason).toContain('HTTP 500')
    const notices = await t.ctx.db
      .select()
      .from(outbox)
      .where(eq(outbox.topic, 'affiliate.postback_disabled'))
    expect(notices).toHaveLength(1)
    expect(JSON.parse(notices[0].payload).url).toBe(`http://127.0.0.1:${receiver.port}`)
    // disabled: nothing is sent however long it waits; a conversion made meanwhile is held, not lost
    const sent = got.length
    await deposit(id, 5003)
    await send()
    expect(got.length).toBe(sent)
    // staff fix the endpoint and re-enable it: the pending postbacks go out
    failWith = 0
    const on = await t.request('PATCH', `/manager/affiliates/${affiliateId}`, {
      token: staff,
      body: { postback_enabled: true },
    })
    expect(on.json).toMatchObject({ postback_enabled: true, postback_failures: 0 })
    clock.advance(3_600_000)
    await send()
    // the two pending before it was disabled, and the deposit held while it was
    expect(got.length).toBe(sent + 3)
    expect(JSON.parse(got.at(-1)!.body).conversion).toMatchObject({ kind: 'deposit', reference_id: '5003' })
    const pending = await t.ctx.db
      .select()
      .from(postbacks)
      .where(and(eq(postbacks.affiliateId, affiliateId), eq(postbacks.status, 'pending')))
    expect(pending).toHaveLength(0)
    const list = await t.request('GET', '/manager/affiliate-postbacks?status=dead', { token: staff })
    expect(list.json.rows.map((r: { id: number }) => r.id)).toEqual([p.id])
  })
  test("a send the brand's allowlist refuses is a setting, not a failure of the endpoint: it never disables it", async () => {
    // the brand no longer lists the receiver's host (as another brand's allowlist would not)
    await t.request('PUT', '/manager/affiliate-settings', {
      token: staff,
      body: { postback_hosts: ['localhost'] },
    })
    const sent = got.length
    await referredCustomer()
    for (let i = 0; i < 25; i++) {
      await send()
      clock.advance(3_600_000)
    }
    staff = await t.staffToken()
    expect(got.length).toBe(sent)
    const a = await t.request('GET', `/manager/affiliates/${affiliateId}`, { token: staff })
    expect(a.json).toMatchObject({ postback_enabled: true, postback_failures: 0 })
    const [refused] = await t.ctx.db
      .select()
      .from(postbacks)
      .where(and(eq(postbacks.affiliateId, affiliateId), sql`${postbacks.lastError} like '%allowlist%'`))
    expect(refused).toBeDefined()
    await t.request('PUT', '/manager/affiliate-settings', {
      token: staff,
      body: { postback_hosts: [`127.0.0.1:${receiver.port}`, 'localhost'] },
    })
  })
})

describe('cut off (a hostile probe, twenty-third session)', () => {
  test('a suspended affiliate, or one whose access to the brand is revoked, is sent nothing of its customers until it is active again', async () => {
    const patch = async (body: Record<string, unknown>) =>
      expect(
        (
          await t.request('PATCH', `/manager/affiliates/${affiliateId}`, {
            token: await t.staffToken(),
            body,
          })
        ).status,
      ).toBe(200)
    const access = async (status: string, password?: string) =>
      expect(
        (
          await t.request('PUT', '/manager/affiliates/access/PBPARTNER', {
            token: await t.staffToken(),
            body: { status, ...(password ? { password } : {}) },
          })
        ).status,
      ).toBe(200)
    failWith = 0
    const customer = await referredCustomer()
    got.length = 0
    await patch({ status: 'suspended' })
    await deposit(customer, 9001)
    await send()
    expect(got).toHaveLength(0)
    await patch({ status: 'active' })
    await access('revoked')
    await send()
    expect(got).toHaveLength(0)
    await access('active', 'pb-pass-2')
    await send()
    expect(got.length).toBeGreaterThan(0)
    expect(got.some((g) => JSON.parse(g.body).conversion.customer_id === customer)).toBe(true)
  })
})
