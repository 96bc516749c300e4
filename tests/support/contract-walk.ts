import { DEV_CASHIER_SECRETS } from '../../src/modules/cashier/config'
import { signCheckout } from '../../src/modules/cashier/providers/checkout'
import { signSandbox } from '../../src/modules/cashier/providers/sandbox'
import * as F from './files'
import { call, DEMO_AFFILIATE_HOST, demoTokens } from './server'

/**
 * The walk of issue 28's contract test, for any runtime: every operation of the document is sent once,
 * with its own examples, and what a newcomer cannot know in advance comes from the answers before, as a
 * Postman collection or Dredd's hooks would chain it: the ids the server makes (an upload's uuid, a
 * payment's token, a dead letter), a webhook's signature over the bytes sent, and the tokens of the demo
 * users (signed in again after an operation that ends sessions). State an example needs (a transaction in
 * review, a funded challenge) is made through the API just before it. The order is the document's; three
 * copy trading deletions run last.
 *
 * The Bun server's contract test (tests/integration/openapi-contract.test.ts) and the edge's acceptance
 * suite (tests/workers/acceptance.test.ts) both run it: the same requests, route by route, every module.
 */

type Json = Record<string, any>

/** Where a walk sends what. */
export interface WalkTarget {
  /** the document served by the runtime under test */
  doc: Json
  /** where the operations under test go: a Prism validating proxy in front of the runtime */
  through: string
  /** the runtime itself: what Prism cannot carry (an endless stream, a redirect) goes straight here */
  origin: string
  /** where the state an example needs is made (not under test) */
  setup: string
  /** a statement on the runtime's database (a fault the API cannot cause from outside) */
  sql: (text: string, args: (string | number)[]) => Promise<unknown>
  feedToken: string
  cronSecret: string
}

export interface Operation {
  method: string
  path: string
  id: string
  op: Json
}

export interface WalkResult {
  sent: number
  /** `METHOD /path: status violations text` of each answer that was not a documented 2xx */
  failures: string[]
  /** each JSON success answer, cut to an example's size */
  recorded: Record<string, unknown>
  /** the operations sent, in order */
  operations: Operation[]
}

export function contractWalk(rt: WalkTarget) {
  const tokens: Record<string, string> = {}
  /** Values the server made, taken from earlier answers. */
  const made: Record<string, unknown> = {}
  /** The demo account's password: two examples change it (and the second sets it back). */
  let userPassword = 'demo-pass-1'
  async function signInAll() {
    Object.assign(tokens, await demoTokens(rt.setup, userPassword))
  }

  const text = (v: unknown) => (typeof v === 'string' ? v : JSON.stringify(v))
  const ref = (s: Json | undefined): Json | undefined =>
    s?.$ref ? rt.doc.components.schemas[String(s.$ref).split('/').pop()!] : s

  /** Run after the last copy trading operation, in this order: what they end, the others still use. */
  const LAST = [
    'DELETE /copytrade/subscription/{id}',
    'DELETE /copytrade/follower/{login}',
    'DELETE /copytrade/master/{id}',
  ]

  function operations(): Operation[] {
    const out: Operation[] = []
    for (const [path, item] of Object.entries<Json>(rt.doc.paths))
      for (const [method, op] of Object.entries<Json>(item))
        out.push({ method: method.toUpperCase(), path, id: `${method.toUpperCase()} ${path}`, op })
    const rank = (o: Operation) => LAST.indexOf(o.id) + 1
    return out.sort((a, b) => rank(a) - rank(b))
  }

  function headersFor(o: Operation): Record<string, string> {
    const h: Record<string, string> = {}
    if (o.op['x-served-on'] === 'affiliate_host') h['x-forwarded-host'] = DEMO_AFFILIATE_HOST
    const sec: Json[] = o.op.security ?? []
    const has = (scheme: string) => sec.some((s) => scheme in s)
    if (has('FeedToken')) h['x-feed-token'] = rt.feedToken
    else if (has('CronSecret')) h['x-cron-secret'] = rt.cronSecret
    else if (has('AffiliateSession')) {
      h.cookie = `tcs_aff=${tokens.AffiliateSession}`
      // as the cabinet's own page sends it (the cookie session's CSRF check)
      if (o.method !== 'GET') h.origin = `http://${DEMO_AFFILIATE_HOST}`
    } else if (has('AffiliateToken')) h.authorization = tokens.AffiliateToken!
    else if (has('ApiTokenAuth')) {
      const roles: string[] = o.op['x-roles'] ?? []
      const order = ['SESSION_USER', 'SESSION_CUSTOMER', 'SESSION_ADMIN', 'SESSION_MANAGER', 'SESSION_DEALER']
      const role = order.find((r) => roles.includes(r))
      if (role) h.authorization = tokens[role]!
    }
    return h
  }

  interface Request {
    path: Record<string, string>
    query: Record<string, string>
    headers: Record<string, string>
    body?: unknown
    type?: string
  }

  /** The operation's own examples: parameters, headers and body. */
  function exampleOf(o: Operation): Request {
    const r: Request = { path: {}, query: {}, headers: headersFor(o) }
    for (const p of o.op.parameters ?? []) {
      const ex = p.example ?? p.schema?.example
      if (ex === undefined) continue
      if (p.in === 'path') r.path[p.name] = text(ex)
      else if (p.in === 'query') r.query[p.name] = text(ex)
      else if (p.in === 'header') r.headers[String(p.name).toLowerCase()] ??= text(ex)
    }
    const content: Json = o.op.requestBody?.content ?? {}
    const type = Object.keys(content)[0]
    if (type) {
      r.type = type
      r.body = structuredClone(content[type].example ?? ref(content[type].schema)?.example)
    }
    return r
  }

  /** The operation's path with its parameters, and its query. */
  function target(o: Operation, r: Request) {
    let path = o.path
    for (const [k, v] of Object.entries(r.path)) path = path.replace(`{${k}}`, encodeURIComponent(v))
    const qs = new URLSearchParams(r.query).toString()
    return `${path}${qs ? `?${qs}` : ''}`
  }

  async function send(o: Operation, r: Request) {
    const headers = { ...r.headers }
    let body: BodyInit | undefined
    if (r.type === 'multipart/form-data') {
      const form = new FormData()
      for (const [k, v] of Object.entries<unknown>((r.body as Json) ?? {})) form.set(k, text(v))
      // Prism reads a body as text: a PDF of plain ASCII passes it unchanged, a PNG would not
      form.set('file', new File([F.PDF], 'passport.pdf', { type: 'application/pdf' }))
      body = form
    } else if (r.type) {
      body = JSON.stringify(r.body ?? {})
      headers['content-type'] = r.type
    }
    const webhook = /^\/cashier\/webhook\/(sandbox|checkout)$/.exec(o.path)?.[1]
    if (webhook === 'sandbox')
      headers['sandbox-signature'] = signSandbox(
        DEV_CASHIER_SECRETS.Demo!.sandbox![0]!,
        String(body),
        Math.floor(Date.now() / 1000),
      )
    if (webhook === 'checkout')
      headers['cko-signature'] = signCheckout(DEV_CASHIER_SECRETS.Demo!.checkout![0]!, String(body))
    const res = await fetch(`${rt.through}${target(o, r)}`, {
      method: o.method,
      headers,
      body,
      redirect: 'manual',
    })
    const answer = await res.text()
    let json: any
    try {
      json = JSON.parse(answer)
    } catch {}
    return { status: res.status, violations: res.headers.get('sl-violations'), text: answer, json }
  }

  /** What Prism cannot carry: an endless stream (it buffers answers) and a redirect (it follows them). */
  const UNPROXIED = new Set(['GET /market/stream', 'GET /go/{code}'])

  /**
   * Sends one of those to the server and checks its answer against the document here: a documented
   * status, the documented media type, and for a redirect a Location on the same host.
   */
  async function sendDirect(o: Operation, r: Request) {
    const controller = new AbortController()
    const res = await fetch(`${rt.origin}${target(o, r)}`, {
      method: o.method,
      headers: r.headers,
      redirect: 'manual',
      signal: controller.signal,
    })
    const documented = o.op.responses?.[String(res.status)]
    const media = Object.keys(documented?.content ?? {})
    const type = (res.headers.get('content-type') ?? '').split(';')[0]!
    const problems: string[] = []
    if (!documented) problems.push(`status ${res.status} is not documented`)
    if (media.length > 0 && !media.includes(type)) problems.push(`${type} is not one of ${media}`)
    if (res.status === 302 && !res.headers.get('location')?.startsWith('/'))
      problems.push(`Location ${res.headers.get('location')} is not a path`)
    let first = ''
    if (type === 'text/event-stream') {
      const reader = res.body!.getReader()
      first = new TextDecoder().decode((await reader.read()).value)
      if (!/^(event|data|:|retry|id)/m.test(first))
        problems.push(`not an event stream: ${first.slice(0, 80)}`)
    }
    controller.abort()
    return {
      status: res.status === 302 ? 200 : res.status,
      violations: problems.length ? problems.join('; ') : null,
      text: first,
      json: undefined,
    }
  }

  /** Runs a request on the server itself (setting up state is not what is under test). */
  const direct = (method: string, path: string, token: string, body?: unknown) =>
    call(rt.setup, method, path, { token, body })

  /** A pending sandbox deposit of the demo's real account: its transaction id and payment token. */
  async function pendingDeposit(method = 'card', amount = 100) {
    const r = await direct('POST', '/cashier/deposit', tokens.SESSION_CUSTOMER!, {
      login: 100001,
      method,
      amount,
    })
    if (r.status !== 200) throw new Error(`deposit: ${r.status} ${r.text}`)
    const token = /\/cashier\/sandbox\/pay\/([0-9a-f]+)/.exec(r.json.next?.url ?? '')?.[1]
    return { id: r.json.transaction.id as number, token }
  }

  /** A pending withdrawal of the demo's real account (its KYC approved first). */
  async function pendingWithdrawal(amount = 50) {
    await kycApproved()
    const r = await direct('POST', '/cashier/withdrawal', tokens.SESSION_CUSTOMER!, {
      login: 100001,
      method: 'wire',
      amount,
    })
    if (r.status !== 200) throw new Error(`withdrawal: ${r.status} ${r.text}`)
    return r.json.transaction.id as number
  }

  async function customerUpload() {
    const form = new FormData()
    form.set('purpose', 'kyc_document')
    form.set('file', new File([F.PDF], 'document.pdf', { type: 'application/pdf' }))
    const r = await fetch(`${rt.setup}/upload`, {
      method: 'POST',
      headers: { authorization: tokens.SESSION_CUSTOMER! },
      body: form,
    })
    return ((await r.json()) as Json).file_id as string
  }

  let kycDone = false
  /** Identity and address documents attached, submitted and approved (withdrawals need them). */
  async function kycApproved() {
    if (kycDone) return
    const c = tokens.SESSION_CUSTOMER!
    const me = (await direct('GET', '/customer/kyc', c)).json.customer_id as number
    for (const [step, document_type] of [
      ['identity', 'passport'],
      ['address', 'utility_bill'],
    ] as const) {
      const file_id = await customerUpload()
      await direct('POST', '/customer/kyc/documents', c, {
        file_id,
        step,
        document_type,
        valid_until: '2031-01-01',
      })
      await direct('POST', `/customer/kyc/steps/${step}/submit`, c, {})
      const d = await direct(
        'POST',
        `/manager/kyc/profiles/${me}/steps/${step}/decision`,
        tokens.SESSION_MANAGER!,
        {
          decision: 'approve',
        },
      )
      if (d.status !== 200) throw new Error(`kyc ${step}: ${d.status} ${d.text}`)
    }
    kycDone = true
  }

  type Hook = (r: Request) => Promise<void>
  /** State an operation's example needs, made before it is sent (ids the server makes replace the example's). */
  const before: Record<string, Hook> = {
    // an event whose payload no consumer can read is parked at once: a dead letter to retry
    'POST /manager/events/dead-letters/{id}/retry': async (r) => {
      await rt.sql(
        `insert into outbox (brand_id, topic, payload, created_at, next_at) values (1, 'trade.opened', 'not json', ?, 0)`,
        [Date.now()],
      )
      for (let i = 0; i < 200; i++) {
        const list = await direct('GET', '/manager/events/dead-letters', tokens.SESSION_ADMIN!)
        const row = list.json?.rows?.[0]
        if (row) {
          r.path.id = String(row.id)
          return
        }
        await Bun.sleep(50)
      }
      throw new Error('no dead letter after 10 s: the relay did not park the unreadable event')
    },
    // a staff change for the trail to show (the walk may reach the list before any)
    'GET /manager/audit': async (r) => {
      // the first page of every route (the example cursor, 1, is past every row; the example route is
      // one this walk may not have called yet)
      delete r.query.cursor
      delete r.query.route
      const d = await direct('POST', '/manager/accounts/100001/balance', tokens.SESSION_MANAGER!, {
        type: 'deposit',
        amount: 100,
        comment: 'wire received',
      })
      if (d.status !== 200) throw new Error(`deposit for the audit example: ${d.status} ${d.text}`)
    },
    'POST /upload': async (r) => {
      r.headers.authorization = tokens.SESSION_CUSTOMER!
    },
    'GET /upload/{uuid}': async (r) => {
      r.headers.authorization = tokens.SESSION_CUSTOMER!
      r.path.uuid = String(made.upload)
    },
    'POST /customer/kyc/documents': async (r) => {
      ;(r.body as Json).file_id = made.upload
    },
    // the review the example decides on: the identity step submitted
    'POST /manager/kyc/profiles/{customer}/steps/{id}/decision': async () => {
      await direct('POST', '/customer/kyc/steps/identity/submit', tokens.SESSION_CUSTOMER!, {})
    },
    'POST /manager/kyc/documents/{id}/decision': async (r) => {
      r.path.id = String(made.kycDocument)
    },
    'GET /manager/kyc/documents/{id}/file': async (r) => {
      r.path.id = String(made.kycDocument)
    },
    'POST /cashier/withdrawal': kycApproved,
    // a payment the provider confirmed with another amount: staff review it
    'POST /manager/cashier/transactions/{id}/resolve': async (r) => {
      const { id } = await pendingDeposit('card', 100)
      const body = JSON.stringify({
        id: `evt_${id}`,
        type: 'payment.succeeded',
        data: { payment_id: `${id}`.padStart(32, '0'), reference: String(id), amount: 1, currency: 'USD' },
      })
      await fetch(`${rt.setup}/cashier/webhook/sandbox`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'sandbox-signature': signSandbox(
            DEV_CASHIER_SECRETS.Demo!.sandbox![0]!,
            body,
            Math.floor(Date.now() / 1000),
          ),
        },
        body,
      })
      r.path.id = String(id)
    },
    // a ledger credit that failed (a fault this test cannot cause from outside: set in the database)
    'POST /manager/cashier/transactions/{id}/retry-credit': async (r) => {
      const { id } = await pendingDeposit('card', 100)
      await rt.sql('update cashier_transactions set status = 4 where id = ?', [id])
      r.path.id = String(id)
    },
    'POST /manager/cashier/transactions/{id}/confirm-wire': async (r) => {
      r.path.id = String((await pendingDeposit('wire', Number((r.body as Json).amount))).id)
    },
    'POST /manager/cashier/transactions/{id}/approve': async (r) => {
      r.path.id = String(await pendingWithdrawal())
    },
    'POST /manager/cashier/transactions/{id}/reject': async (r) => {
      r.path.id = String(await pendingWithdrawal())
    },
    'POST /cashier/transactions/{id}/cancel': async (r) => {
      r.path.id = String(await pendingWithdrawal())
    },
    'POST /manager/cashier/transactions/{id}/mark-paid': async (r) => {
      const id = await pendingWithdrawal()
      await direct('POST', `/manager/cashier/transactions/${id}/approve`, tokens.SESSION_MANAGER!, {})
      r.path.id = String(id)
    },
    'POST /manager/cashier/transactions/{id}/payout-failed': async (r) => {
      const id = await pendingWithdrawal()
      await direct('POST', `/manager/cashier/transactions/${id}/approve`, tokens.SESSION_MANAGER!, {})
      r.path.id = String(id)
    },
    'GET /cashier/sandbox/pay/{token}': async (r) => {
      made.payment = (await pendingDeposit()).token
      r.path.token = String(made.payment)
    },
    'POST /cashier/sandbox/pay/{token}': async (r) => {
      r.path.token = String(made.payment)
    },
    'PUT /trade/modify': async (r) => {
      ;(r.body as Json).order = made.ticket
    },
    'DELETE /trade/close': async (r) => {
      ;(r.body as Json).order = made.ticket
    },
    // a pending order to cancel: a buy limit well below the price
    'DELETE /trade/cancel': async (r) => {
      const o = await direct('POST', '/trade/open', tokens.SESSION_USER!, {
        login: 100001,
        cmd: 2,
        volume: 10,
        symbol: 'BTCUSD',
        open_price: 1000,
        sl: 0,
        tp: 0,
      })
      if (o.status !== 200) throw new Error(`pending order: ${o.status} ${o.text}`)
      ;(r.body as Json).order = o.json.order
    },
    'POST /prop/challenges/{id}/payout': async (r) => {
      r.path.id = String(await fundedWithProfit())
    },
    // a subscription of its own to disable (the customer's example ends the first one)
    'POST /manager/copytrade/subscriptions/{id}/disable': async (r) => {
      const s = await direct('POST', '/copytrade/subscription', tokens.SESSION_CUSTOMER!, {
        follower_login: 100001,
        master_id: 1,
        policy_version: (await direct('GET', '/copytrade/masters/1', tokens.SESSION_CUSTOMER!)).json
          .policy_version,
      })
      if (s.status !== 200) throw new Error(`subscription: ${s.status} ${s.text}`)
      r.path.id = String(s.json.id)
    },
    'DELETE /manager/affiliates/{id}/postback-keys/{key_id}': async (r) => {
      r.path.key_id = String(made.postbackKey)
    },
    'POST /manager/affiliate-tokens/{token_id}/revoke': async (r) => {
      r.path.token_id = String(made.affiliateToken)
    },
    // the job closed the last month at start: the example's month and those after are opened again
    'POST /manager/affiliate-periods/{period}/close': async (r) => {
      const p = String(r.path.period)
      await rt.sql('delete from affiliate_statements where brand_id = 1 and period >= ?', [p])
      await rt.sql(
        'delete from affiliate_commissions where brand_id = 1 and customer_id = 0 and period >= ?',
        [p],
      )
      await rt.sql('delete from affiliate_periods where brand_id = 1 and period >= ?', [p])
    },
    'GET /manager/affiliate-statements/{id}': async (r) => {
      r.path.id = String(await statementOf('pending'))
    },
    'POST /manager/affiliate-statements/{id}/approve': async (r) => {
      r.path.id = String(await statementOf('pending'))
    },
    'POST /manager/affiliate-statements/{id}/pay': async (r) => {
      r.path.id = String(await statementOf('approved'))
    },
    'GET /api/affiliate/statements/{id}': async (r) => {
      r.path.id = String(await statementOf(undefined, 1))
    },
  }

  /**
   * A challenge in its funded phase with profit to take, reached as a trader does (prop-live.test.ts):
   * each phase's 1% target met by a winning trade, the evaluator run by the cron route.
   */
  async function fundedWithProfit() {
    const rules = { profit_target_pct: 1, daily_loss_pct: 5, total_loss_pct: 10, min_trading_days: 1 }
    const program = await direct('POST', '/manager/prop/programs', tokens.SESSION_MANAGER!, {
      name: 'Contract quick',
      price: 10,
      currency: 'USD',
      active: true,
      steps: [
        { account_group: 'prop\\eval\\USD', phase_type: 0, rules },
        {
          account_group: 'prop\\funded\\USD',
          phase_type: 1,
          profit_split: 0.8,
          rules: { ...rules, profit_target_pct: 0, min_trading_days: 0 },
        },
      ],
    })
    if (program.status !== 200) throw new Error(`program: ${program.status} ${program.text}`)
    const buy = await direct('POST', '/prop/challenge/buy', tokens.SESSION_CUSTOMER!, {
      program_id: program.json.id,
      payer_login: 100001,
    })
    if (buy.status !== 200) throw new Error(`buy: ${buy.status} ${buy.text}`)
    const challenge = buy.json.challenge.id as number
    const evaluate = () =>
      call(rt.setup, 'POST', '/cron/prop.evaluate', { headers: { 'x-cron-secret': rt.cronSecret } })
    // BTCUSD trades every day (EURUSD not at weekends): 1 lot, 600 up, about 570 USD over a 100 USD target
    const quote = (bid: number) =>
      direct('POST', '/market/quotes', tokens.SESSION_DEALER!, {
        ticks: [{ symbol: 'BTCUSD', bid, ask: bid + 30 }],
      })
    const winningTrade = async (login: number) => {
      await quote(43_000)
      await direct('PUT', '/password', tokens.SESSION_ADMIN!, { login, password: 'phase-pass-1' })
      const token = (await call(rt.setup, 'POST', '/sign/in', { body: { login, password: 'phase-pass-1' } }))
        .json.__token as string
      const o = await direct('POST', '/trade/open', token, {
        login,
        cmd: 0,
        volume: 100,
        symbol: 'BTCUSD',
        sl: 0,
        tp: 0,
      })
      if (o.status !== 200) throw new Error(`open: ${o.status} ${o.text}`)
      await quote(43_600)
      await direct('DELETE', '/trade/close', token, { order: o.json.order })
    }
    await evaluate()
    await winningTrade(buy.json.account.login)
    await evaluate()
    const funded = (await direct('GET', `/prop/challenges/${challenge}`, tokens.SESSION_CUSTOMER!)).json
    await winningTrade(funded.current_phase.account_login)
    await quote(43_000)
    return challenge
  }

  /** A statement of the Demo brand (of one affiliate, in one state), the newest. */
  async function statementOf(status?: string, affiliate?: number) {
    const q = [status ? `status=${status}` : '', affiliate ? `affiliate_id=${affiliate}` : ''].filter(Boolean)
    const list = await direct('GET', `/manager/affiliate-statements?${q.join('&')}`, tokens.SESSION_MANAGER!)
    const id = list.json?.rows?.[0]?.id
    if (!id) throw new Error(`no ${status ?? ''} statement: ${list.status} ${list.text}`)
    return id as number
  }

  /** Values taken from answers, for the operations after. */
  const after: Record<string, (json: Json) => void> = {
    'POST /trade/open': (j) => {
      made.ticket = j.order
    },
    'POST /upload': (j) => {
      made.upload = j.file_id
    },
    'POST /customer/kyc/documents': (j) => {
      made.kycDocument = j.document.id
    },
    'POST /manager/affiliates/{id}/postback-keys': (j) => {
      made.postbackKey = j.key_id
    },
    'POST /manager/affiliates/{id}/tokens': (j) => {
      made.affiliateToken = j.id
    },
  }

  const JWT = /^eyJ[\w-]+\.[\w-]+\.[\w-]+$/

  /**
   * A real answer as a document example: lists cut to two items, or the fewest the schema allows (an
   * example shows the shape, not the demo's data), and tokens replaced by a placeholder of their form (a
   * real one stays valid for hours).
   */
  function exampleFrom(value: unknown, schema: Json | undefined): unknown {
    const s = ref(schema)
    const branch = (s?.anyOf ?? s?.oneOf)
      ?.map(ref)
      .find((b: Json) => b?.type !== undefined && b.enum?.[0] !== null)
    const shape = branch ?? s
    if (Array.isArray(value))
      return value.slice(0, Math.max(2, shape?.minItems ?? 0)).map((v) => exampleFrom(v, shape?.items))
    if (value && typeof value === 'object')
      return Object.fromEntries(
        Object.entries(value).map(([k, v]) => [
          k,
          exampleFrom(
            v,
            shape?.properties?.[k] ??
              (typeof shape?.additionalProperties === 'object' ? shape.additionalProperties : undefined),
          ),
        ]),
      )
    if (typeof value === 'string' && JWT.test(value))
      return 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJleGFtcGxlIn0.c2lnbmF0dXJlLW9mLXRoZS1leGFtcGxl'
    return value
  }

  /** The operations whose success is JSON: each must carry an example in the document. */
  const answersJson = (o: Operation) => !!o.op.responses?.['200']?.content?.['application/json']

  /** Operations that end sessions: the demo users sign in again after them. */
  // an affiliate's new password or access ends its cabinet sessions too
  const endsSessions = (o: Operation) =>
    /sign\/out|password|logout|sessions\/end/.test(o.path) ||
    o.id === 'PATCH /manager/affiliates/{id}' ||
    o.id.startsWith('PUT /manager/affiliates/access/')

  /** Sends every operation once, in the document's order (LAST at the end). */
  async function run(opts: { only?: (o: Operation) => boolean } = {}): Promise<WalkResult> {
    await signInAll()
    const ops = operations().filter(opts.only ?? (() => true))
    const failures: string[] = []
    const recorded: Record<string, unknown> = {}
    let sent = 0
    for (const o of ops) {
      const r = exampleOf(o)
      // a setup that fails is this operation's failure; the walk goes on, so one report names them all
      try {
        await before[o.id]?.(r)
      } catch (e) {
        failures.push(`${o.id}: setup: ${(e as Error).message}`)
        continue
      }
      const res = UNPROXIED.has(o.id) ? await sendDirect(o, r) : await send(o, r)
      sent++
      if (res.status >= 300 || res.violations)
        failures.push(`${o.id}: ${res.status} ${res.violations ?? ''} ${res.text.slice(0, 600)}`)
      else if (res.json) {
        recorded[o.id] = exampleFrom(res.json, o.op.responses?.['200']?.content?.['application/json']?.schema)
        after[o.id]?.(res.json)
      }
      if (o.id === 'PUT /account/password') userPassword = (r.body as Json).new_password
      if (o.id === 'PUT /customer/accounts/{login}/password' && r.path.login === '100001')
        userPassword = (r.body as Json).password
      if (endsSessions(o)) await signInAll()
    }
    return { sent, failures, recorded, operations: ops }
  }

  return { run, operations, answersJson }
}
