import { and, eq } from 'drizzle-orm'
import { hashPassword } from '../../kernel/auth/passwords'
import { brandHosts, brands } from '../../kernel/brand/schema'
import type { AffiliateCtx } from './context'
import type { Fact } from './domain/conversions'
import type { PlanTerms } from './domain/plans'
import {
  affiliateAccess,
  affiliateSettings,
  affiliates,
  commissionPlans,
  planAssignments,
  planVersions,
  trackingLinks,
} from './schema'
import { recordFact } from './service/ledger'
import { trackingOf } from './service/referral'
import { PARTNER_SITE } from './site'

/**
 * The demo affiliates (README): one per demo brand, with cabinet credentials and two links each, and the
 * brand's cabinet host.
 */
export const DEMO_AFFILIATES = [
  {
    brand: 'Demo',
    email: 'partner@example.com',
    code: 'DEMOPARTNER',
    password: 'partner-pass-1',
    prefix: 'demo',
    host: 'affiliates.localhost',
  },
  {
    brand: 'Beta',
    email: 'beta-partner@example.com',
    code: 'BETAPARTNER',
    password: 'beta-partner-pass-1',
    prefix: 'beta',
    host: 'affiliates.beta.localhost',
  },
] as const

const DAY = 86_400_000

/**
 * Affiliates, links and referred customers with conversions of every kind, so the cabinet shows a funnel
 * on first start. Every insert is conditional (unique email, code, fact), so two instances seed once.
 * The demo customers' later history (KYC, deposits, trades) is recorded as facts with negative event ids:
 * no outbox event made them.
 */
export async function seedAffiliateDemo(ctx: AffiliateCtx) {
  const now = ctx.clock.now()
  for (const d of DEMO_AFFILIATES) {
    const [brand] = await ctx.db.select().from(brands).where(eq(brands.name, d.brand))
    if (!brand) continue
    await ctx.db
      .insert(brandHosts)
      .values({ host: d.host, brandId: brand.id, site: PARTNER_SITE.name })
      .onConflictDoNothing()
    await ctx.db
      .insert(affiliates)
      .values({ brandId: brand.id, email: d.email, code: d.code, name: `${d.brand} Partner`, createdAt: now })
      .onConflictDoNothing()
    const [aff] = await ctx.db.select().from(affiliates).where(eq(affiliates.code, d.code))
    const [access] = await ctx.db
      .select()
      .from(affiliateAccess)
      .where(and(eq(affiliateAccess.affiliateId, aff.id), eq(affiliateAccess.brandId, brand.id)))
    if (!access)
      await ctx.db
        .insert(affiliateAccess)
        .values({
          affiliateId: aff.id,
          brandId: brand.id,
          passwordHash: await hashPassword(d.password),
          createdAt: now,
        })
        .onConflictDoNothing()
    await ctx.db
      .insert(affiliateSettings)
      .values({ brandId: brand.id, postbackHosts: JSON.stringify(['postbacks.example.com']) })
      .onConflictDoNothing()
    for (const l of [
      { code: `${d.prefix}-spring`, landingPath: '/p/promo', campaign: 'spring' },
      { code: `${d.prefix}-home`, landingPath: '/', campaign: 'always-on' },
    ])
      await ctx.db
        .insert(trackingLinks)
        .values({ brandId: brand.id, affiliateId: aff.id, ...l, createdAt: now })
        .onConflictDoNothing()
    const [link] = await ctx.db
      .select()
      .from(trackingLinks)
      .where(and(eq(trackingLinks.brandId, brand.id), eq(trackingLinks.code, `${d.prefix}-spring`)))
    await seedDemoPlan(ctx, brand.id, now)
    await seedReferred(ctx, brand.id, aff.id, link, d.prefix, now)
  }
  // the cabinets' hosts
  ctx.brands.invalidate()
}

/** The demo's default plan: hybrid, in effect from the start, so the demo history earns commissions. */
const DEMO_PLAN: PlanTerms = {
  type: 'hybrid',
  cpa: { USD: 20_000, EUR: 18_000 },
  qualify: { min_first_deposit: { USD: 10_000, EUR: 10_000 } },
  revshare_bp: 2500,
  revshare_basis: 'trading_revenue',
  markup_per_lot: { USD: 500, EUR: 450 },
  hold_days: 30,
  sub_affiliate_bp: 1000,
}

async function seedDemoPlan(ctx: AffiliateCtx, brandId: number, now: number) {
  await ctx.db
    .insert(commissionPlans)
    .values({ brandId, name: 'Demo hybrid', createdAt: now })
    .onConflictDoNothing()
  const [plan] = await ctx.db
    .select({ id: commissionPlans.id })
    .from(commissionPlans)
    .where(and(eq(commissionPlans.brandId, brandId), eq(commissionPlans.name, 'Demo hybrid')))
  await ctx.db
    .insert(planVersions)
    .values({
      planId: plan.id,
      version: 1,
      effectiveFrom: 0,
      terms: JSON.stringify(DEMO_PLAN),
      createdAt: now,
    })
    .onConflictDoNothing()
  await ctx.db
    .insert(planAssignments)
    .values({ brandId, affiliateId: 0, effectiveFrom: 0, planId: plan.id, createdAt: now })
    .onConflictDoNothing()
}

async function seedReferred(
  ctx: AffiliateCtx,
  brandId: number,
  affiliateId: number,
  link: typeof trackingLinks.$inferSelect,
  prefix: string,
  now: number,
) {
  const values = { link_code: link.code, campaign: link.campaign, utm_source: 'partner' }
  const passwordHash = await hashPassword('referred-pass-1')
  for (let i = 1; i <= 6; i++) {
    const email = `${prefix}-referred-${i}@example.com`
    // each with the click id and sub-id a partner's tracker would have set
    const theirs = { ...values, click_id: `${prefix}-click-${i}`, sub1: 'spring' }
    const referral = { affiliateId, linkId: link.id, values: theirs, wonBy: 'demo' }
    await ctx.accounts.createCustomer({
      brandId,
      email,
      passwordHash,
      name: `Referred ${i}`,
      // the record attribution keeps (without it, nobody is referred: the facts stay the demo's own)
      attribution: ctx.attributions()?.recordOf(referral) ?? null,
    })
    const c = await ctx.accounts.customerByEmail(brandId, email)
    if (!c) continue
    const at = (days: number) => now - days * DAY
    const ref = { brandId, customerId: c.id, affiliateId, linkId: link.id, tracking: trackingOf(theirs) }
    // a funnel that narrows: 6 registered, 5 approved, 4 deposited (two of them twice), 3 trading, 1 refund
    type Demo = Omit<Fact, 'eventId'>
    const fact = (
      when: boolean,
      kind: Demo['kind'],
      reference: string,
      daysAgo: number,
      money: { valueMinor: number; currency: string } | null = null,
      volume = 0,
    ): Demo[] =>
      when
        ? [
            {
              kind,
              reference,
              valueMinor: money?.valueMinor ?? null,
              currency: money?.currency ?? '',
              volume,
              eventTime: at(daysAgo - i * 5),
            },
          ]
        : []
    const usd = (valueMinor: number) => ({ valueMinor, currency: 'USD' })
    const facts: Demo[] = [
      ...fact(true, 'registration', String(c.id), 40),
      ...fact(i <= 5, 'kyc', String(c.id), 38),
      ...fact(i <= 4, 'deposit', `demo-${prefix}-${i}-a`, 37, usd(50_000 * i)),
      ...fact(i <= 2, 'deposit', `demo-${prefix}-${i}-b`, 36, usd(25_000)),
      ...fact(i === 2, 'reversal', `demo-${prefix}-${i}-b`, 35, usd(25_000)),
      // the commission and swap a trade paid: RevShare's revenue
      ...fact(i <= 3, 'trade', `demo-${i}`, 34, usd(1_500), 100),
    ]
    await ctx.db.transaction(async (tx) => {
      let eventId = -i * 100
      for (const f of facts) await recordFact(ctx, tx, ref, { ...f, eventId: eventId-- })
    })
  }
}
