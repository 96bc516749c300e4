import { eq } from 'drizzle-orm'
import type { Session } from '../../kernel/auth/session'
import type { Brand } from '../../kernel/brand/registry'
import { publishChange } from '../../kernel/bus/channel'
import type { PropCtx } from './context'
import { PURCHASE } from './domain/purchase'
import { PHASES_CHANGED } from './live'
import { buy } from './purchase'
import { propChallenges, propPhases } from './schema'
import { challengeView, purchaseView } from './views'

/**
 * The 200 body of POST /prop/challenge/buy (4.14). A repeated idempotency key answers the existing
 * purchase with its challenges, `idempotent = true` and no password (it was shown once), and whether the
 * account must still change its generated password as it stands now (false once it has changed it).
 */
export async function buyAnswer(
  ctx: PropCtx,
  brand: Brand,
  session: Session,
  body: { program_id: number; payer_login: number; idempotency_key?: string },
) {
  const r = await buy(ctx, brand, session, body)
  if ('prior' in r) {
    const p = r.prior!
    const challenges = await ctx.db.select().from(propChallenges).where(eq(propChallenges.purchaseId, p.id))
    const found = p.accountLogin ? await accountOf(ctx, brand, p.accountLogin) : null
    const account = found?.view ?? null
    return {
      accepted: p.status === PURCHASE.active,
      idempotent: true,
      purchase: purchaseView(p),
      challenge: challenges[0] ? challengeView(challenges[0]) : null,
      challenges: challenges.map(challengeView),
      account,
      // an account not opened yet starts on a generated password
      must_change_password: found ? found.mustChangePassword : true,
      ...(p.paymentOrder !== null ? { payment_order: p.paymentOrder } : {}),
      initial_balance_order: p.initialBalanceOrder,
    }
  }
  const [challenge] = await ctx.db.select().from(propChallenges).where(eq(propChallenges.id, r.challengeId))
  const [phase] = await ctx.db
    .select({ id: propPhases.id })
    .from(propPhases)
    .where(eq(propPhases.challengeId, r.challengeId))
  // the engine watches the new phase's account from its first trade
  await publishChange(ctx.bus, ctx.logger, PHASES_CHANGED, [phase!.id])
  return {
    accepted: true,
    idempotent: false,
    purchase: purchaseView(r.purchase),
    challenge: challengeView(challenge!),
    challenges: [challengeView(challenge!)],
    account: { ...r.account, brand: brand.name },
    temporary_password: r.password,
    must_change_password: true,
    ...(r.purchase.paymentOrder !== null ? { payment_order: r.purchase.paymentOrder } : {}),
    initial_balance_order: r.purchase.initialBalanceOrder,
  }
}

async function accountOf(ctx: PropCtx, brand: Brand, login: number) {
  const a = await ctx.accounts.read.account(login)
  const g = a && (await ctx.accounts.read.group(a.groupId))
  if (!a || !g) return null
  return {
    view: {
      login,
      group: g.name,
      brand: brand.name,
      currency: g.currency,
      leverage: a.leverage,
      enable: a.enable,
      customer_id: a.customerId ?? 0,
    },
    mustChangePassword: a.mustChangePassword === 1,
  }
}
