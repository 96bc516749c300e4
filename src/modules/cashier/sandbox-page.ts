import { and, asc, eq, inArray, ne, sql } from 'drizzle-orm'
import { Elysia, t } from 'elysia'
import { brands } from '../../kernel/brand/schema'
import { doc, errors } from '../../kernel/http/openapi'
import { OneOf } from '../../kernel/http/schemas'
import { security } from '../../kernel/http/security'
import { fromMinor } from '../accounts'
import { type CashierCtx, secretsOf } from './context'
import type { ProviderUpdate } from './domain/status'
import { refuse } from './errors'
import type { HostedPayments } from './providers/port'
import { sandboxPayments } from './schema'

type PaymentRow = typeof sandboxPayments.$inferSelect
/** How long a provider retries a webhook the merchant does not acknowledge (Stripe: 3 days). */
const RETRY_WINDOW_MS = 3 * 86_400_000

/** A webhook owed, since `at` (epoch ms; webhooks owed before it was kept count from the payment). */
type Owed = { id: string; update: 'pending' | 'confirmed' | 'failed' | 'refunded'; at?: number }

const STATUS_UPDATE: Record<string, ProviderUpdate> = {
  pending_3ds: 'pending',
  captured: 'confirmed',
  declined: 'failed',
  refunded: 'refunded',
  // a session ended unpaid (expireSession): it can no longer be paid
  expired: 'cancelled',
}

/**
 * The provider side of the sandbox (and of the checkout-shaped module in development): payments created
 * by `startDeposit`, paid on a hosted page this app serves, and the signed webhooks the provider owes
 * the merchant, sent at once and again by a job until acknowledged with a 2xx (as real providers retry).
 */
export class SandboxGateway implements HostedPayments {
  constructor(private readonly ctx: CashierCtx) {}

  async create(p: Parameters<HostedPayments['create']>[0]) {
    const token = crypto.randomUUID().replaceAll('-', '')
    const now = this.ctx.clock.now()
    await this.ctx.db
      .insert(sandboxPayments)
      .values({ token, ...p, status: 'created', createdAt: now, updatedAt: now })
    return { token, url: this.pageUrl(token, p.notifyUrl) }
  }

  pageUrl(token: string, notifyUrl: string) {
    return `${new URL(notifyUrl).origin}/cashier/sandbox/pay/${token}`
  }

  async status(token: string) {
    const [row] = await this.ctx.db.select().from(sandboxPayments).where(eq(sandboxPayments.token, token))
    return row ? (STATUS_UPDATE[row.status] ?? null) : null
  }

  /** Ends a payment nobody paid: only from created or pending_3ds, so of a pay and an expiry one wins. */
  async expire(token: string) {
    const now = this.ctx.clock.now()
    const [r] = await this.ctx.db
      .update(sandboxPayments)
      .set({ status: 'expired', updatedAt: now })
      .where(
        and(eq(sandboxPayments.token, token), inArray(sandboxPayments.status, ['created', 'pending_3ds'])),
      )
      .returning({ token: sandboxPayments.token })
    return !!r
  }

  async payment(brandId: number, token: string) {
    const [row] = await this.ctx.db.select().from(sandboxPayments).where(eq(sandboxPayments.token, token))
    if (!row || row.brandId !== brandId) throw refuse('PAYMENT_NOT_FOUND', 'payment not found')
    return row
  }

  /** The customer's choice on the hosted page. */
  async act(
    brandId: number,
    token: string,
    action: 'pay' | 'decline' | 'challenge' | 'challenge_pass' | 'challenge_fail',
  ) {
    const row = await this.payment(brandId, token)
    const moves: Record<string, [string[], string, Owed['update']]> = {
      pay: [['created'], 'captured', 'confirmed'],
      decline: [['created'], 'declined', 'failed'],
      challenge: [['created'], 'pending_3ds', 'pending'],
      challenge_pass: [['pending_3ds'], 'captured', 'confirmed'],
      challenge_fail: [['pending_3ds'], 'declined', 'failed'],
    }
    const [from, to, update] = moves[action]
    const conflict = (status: string) =>
      refuse('PAYMENT_STATE_CONFLICT', `the payment is ${status}: ${action} is not possible`)
    if (!from.includes(row.status)) throw conflict(row.status)
    const now = this.ctx.clock.now()
    const owed: Owed = { id: `${token}-${to}`, update, at: now }
    // taken only from the state read: of two choices sent at once (pay and decline) one moves the payment
    // and owes its webhook; the other finds the state moved and is refused
    const [r] = await this.ctx.db
      .update(sandboxPayments)
      .set({
        status: to,
        outbox: sql`json_insert(${sandboxPayments.outbox}, '$[#]', json(${JSON.stringify(owed)}))`,
        updatedAt: now,
      })
      .where(and(eq(sandboxPayments.token, token), eq(sandboxPayments.status, row.status)))
      .returning()
    if (!r) throw conflict((await this.payment(brandId, token)).status)
    await this.deliver(r)
    return { status: to, return_url: row.returnUrl }
  }

  /** Sends the webhooks owed for one payment; what the merchant acknowledged leaves the list. */
  async deliver(row: PaymentRow) {
    const owed: Owed[] = JSON.parse(row.outbox)
    if (owed.length === 0) return
    const provider = this.ctx.providers.get(row.provider)
    const [brand] = await this.ctx.db
      .select({ name: brands.name })
      .from(brands)
      .where(eq(brands.id, row.brandId))
    const secret = brand ? secretsOf(this.ctx, brand.name, row.provider)[0] : undefined
    const simulator = provider?.simulator
    const acknowledged = new Set<string>()
    // without a simulator or a secret nothing can be sent: the row still goes to the back of the queue and
    // its webhooks past their window are given up on, so such rows starve no others
    if (simulator && secret)
      for (const o of owed) {
        const body = simulator.body(o.id, o.update, row)
        const ok = await fetch(row.notifyUrl, {
          method: 'POST',
          headers: simulator.headers(secret, body, this.ctx.clock.now()),
          body,
          signal: AbortSignal.timeout(5000),
        })
          .then((r) => r.ok)
          .catch(() => false)
        if (ok) acknowledged.add(o.id)
      }
    // a webhook past its retry window is given up on, as providers do (the reconcile job asks the status);
    // the list is read again in the write: a webhook owed meanwhile (the customer acted) stays in it. One
    // still owed goes to the back of the job's queue, so a few unreachable ones starve no others.
    const now = this.ctx.clock.now()
    await this.ctx.db.transaction(async (tx) => {
      const [cur] = await tx
        .select({ outbox: sandboxPayments.outbox })
        .from(sandboxPayments)
        .where(eq(sandboxPayments.token, row.token))
      if (!cur) return
      const left = (JSON.parse(cur.outbox) as Owed[]).filter(
        (o) => !acknowledged.has(o.id) && now - (o.at ?? row.createdAt) <= RETRY_WINDOW_MS,
      )
      await tx
        .update(sandboxPayments)
        .set({ outbox: JSON.stringify(left), updatedAt: now })
        .where(eq(sandboxPayments.token, row.token))
    })
  }

  /** Job: webhooks not acknowledged yet are sent again, those waiting longest first. */
  async redeliver() {
    const rows = await this.ctx.db
      .select()
      .from(sandboxPayments)
      .where(ne(sandboxPayments.outbox, '[]'))
      .orderBy(asc(sandboxPayments.updatedAt))
      .limit(100)
    for (const r of rows) await this.deliver(r)
    return rows.length
  }
}

const esc = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)

function page(row: PaymentRow, nonce: string) {
  const amount = `${fromMinor(row.amount, row.currency)} ${row.currency}`
  const challenge = row.status === 'pending_3ds'
  const open = row.status === 'created' || challenge
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Sandbox payment</title>
<meta name="viewport" content="width=device-width,initial-scale=1">
<style nonce="${nonce}">body{font:16px system-ui,sans-serif;max-width:28rem;margin:3rem auto;padding:0 1rem}
button{font:inherit;padding:.6rem 1rem;margin:.3rem .3rem 0 0;cursor:pointer}.note{color:#555;font-size:.9rem}</style></head>
<body><h1>Sandbox payment</h1>
<p>Amount: <strong id="amount">${esc(amount)}</strong></p>
<p>Card: <code>4242 4242 4242 4242</code> (sandbox; no money moves)</p>
<p id="status" data-status="${esc(row.status)}">Status: ${esc(row.status)}</p>
<div id="actions">${
    !open
      ? ''
      : challenge
        ? '<p>3-D Secure check: confirm with your bank.</p><button data-action="challenge_pass">Confirm (3-D Secure)</button><button data-action="challenge_fail">Fail the check</button>'
        : '<button data-action="pay">Pay</button><button data-action="decline">Decline</button><button data-action="challenge">Pay with 3-D Secure</button>'
  }</div>
<p class="note">This page stands in for the payment provider in development.</p>
<script nonce="${nonce}">
for (const b of document.querySelectorAll('button[data-action]')) b.addEventListener('click', async () => {
  for (const x of document.querySelectorAll('button')) x.disabled = true
  const r = await fetch(location.pathname, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ action: b.dataset.action }) })
  const j = await r.json()
  if (!r.ok) { document.getElementById('status').textContent = 'Error: ' + (j.message || j.error); return }
  if (j.status === 'pending_3ds') { location.reload(); return }
  document.getElementById('status').dataset.status = j.status
  document.getElementById('status').textContent = 'Status: ' + j.status
  const a = document.createElement('a')
  a.id = 'back'
  a.href = j.return_url
  a.textContent = 'Back to the merchant'
  document.getElementById('actions').replaceChildren(a)
})
</script></body></html>`
}

const html = (body: string, nonce: string) =>
  new Response(body, {
    headers: {
      'content-type': 'text/html; charset=utf-8',
      'content-security-policy': `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'nonce-${nonce}'; connect-src 'self'; form-action 'none'; frame-ancestors 'none'`,
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
    },
  })

const Token = t.String({
  pattern: '^[0-9a-f]{32}$',
  description: 'payment token from the redirect URL',
  example: '0123456789abcdef0123456789abcdef',
})

/** The hosted sandbox page (public: the token is the capability, as on a provider's own page). */
export const sandboxRoutes = (ctx: CashierCtx, gateway: SandboxGateway) =>
  new Elysia({ name: 'cashier-sandbox', seed: ctx.instanceId })
    .use(security(ctx))
    .get(
      '/cashier/sandbox/pay/:token',
      async ({ brand, params }) => {
        const nonce = crypto.randomUUID().replaceAll('-', '')
        return html(page(await gateway.payment(brand.id, params.token), nonce), nonce)
      },
      {
        brand: true,
        params: t.Object({ token: Token }),
        response: errors({ 404: ['PAYMENT_NOT_FOUND'] }),
        detail: doc('Cashier', 'Sandbox hosted payment page (development provider)', {
          secured: false,
          media: ['text/html'],
        }),
      },
    )
    .post(
      '/cashier/sandbox/pay/:token',
      ({ brand, params, body }) => gateway.act(brand.id, params.token, body.action),
      {
        brand: true,
        params: t.Object({ token: Token }),
        body: t.Object(
          {
            action: OneOf(['pay', 'decline', 'challenge', 'challenge_pass', 'challenge_fail'], {
              description: 'the customer’s choice on the page',
            }),
          },
          { example: { action: 'pay' } },
        ),
        response: {
          200: t.Object({ status: t.String(), return_url: t.String() }),
          ...errors({ 404: ['PAYMENT_NOT_FOUND'], 409: ['PAYMENT_STATE_CONFLICT'] }),
        },
        detail: doc('Cashier', 'Sandbox payment page action', {
          secured: false,
          description:
            'The sandbox provider records the outcome and sends its signed webhook to the merchant.',
        }),
      },
    )
    .get(
      '/cashier/sandbox/done',
      () => {
        const nonce = crypto.randomUUID().replaceAll('-', '')
        return html(
          '<!doctype html><title>Payment finished</title><p id="done">Payment finished. You can close this page.</p>',
          nonce,
        )
      },
      {
        brand: true,
        response: errors(),
        detail: doc('Cashier', 'Default return page after a sandbox payment', {
          secured: false,
          media: ['text/html'],
        }),
      },
    )
